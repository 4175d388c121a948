"""Write what a verl recipe of this folder reads: the train and validation datasets (Parquet) and the agent
loop file (one loop per id and role, with the recipe's env kwargs and Profile Controller).

    python recipes/verl/prepare.py sead_paper --out data/sead_paper
    python recipes/verl/prepare.py sead_single_gpu --out data/sead_single_gpu

Runs in this project's environment or verl's (it needs dialogue_gym, datasets and omegaconf, not verl).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def recipe_settings(name: str) -> dict:
    """The ``dialogue_gym`` block of ``recipes/verl/<name>.yaml``, with the rollout's n."""
    from omegaconf import OmegaConf

    config = OmegaConf.load(HERE / f"{name}.yaml")
    settings = OmegaConf.to_container(config.dialogue_gym, resolve=True)
    settings["rollout_n"] = int(config.actor_rollout_ref.rollout.n)
    return settings


def prepare(name: str, out: str) -> dict[str, str]:
    import datasets

    from dialogue_gym.integrations.verl import dataset_rows, write_agent_loop_config

    settings = recipe_settings(name)
    curriculum = settings.get("profile_controller")
    if curriculum is not None and curriculum["batch_size"] != settings["rollout_n"]:
        raise SystemExit(f"{name}: the Profile Controller's batch_size ({curriculum['batch_size']}) must equal rollout.n ({settings['rollout_n']}).")
    folder = pathlib.Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    env_id, kwargs = settings["env_id"], settings.get("env_kwargs") or {}
    written = {}
    for split, rows, seed in (("train", settings["train_rows"], settings["seed"]), ("val", settings["val_rows"], settings["seed"] + 10_000)):
        path = folder / f"{split}.parquet"
        datasets.Dataset.from_list(dataset_rows(env_id, rows, seed=seed, learner=settings.get("learner"), env_kwargs=kwargs)).to_parquet(str(path))
        written[split] = str(path)
    written["agent_loops"] = write_agent_loop_config(str(folder / "agent_loops.yaml"), {env_id: kwargs}, settings.get("max_turn_tokens"), curriculum)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", choices=sorted(p.stem for p in HERE.glob("*.yaml")))
    parser.add_argument("--out", required=True, help="folder for train.parquet, val.parquet and agent_loops.yaml")
    args = parser.parse_args(argv)
    for what, path in prepare(args.recipe, args.out).items():
        print(f"{what}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
