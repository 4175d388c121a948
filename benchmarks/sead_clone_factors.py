"""Which of steps, capacity and DAgger rounds moves the cpu-lm-scratch clone toward its teacher (issue 41).

Every subcommand works from a finished ``python -m trainers.sead --preset cpu-lm-scratch --iterations 0``
run folder (``--base``: its expert dialogues ``sft/sft``, tokenizer and SFT checkpoint) and writes into
``--out`` what the docs render (``results/*.json`` in the trainer's formats; copy them under
docs/results/training/):

    more     continue the SFT checkpoint on the same dialogues (random batches, a fresh cosine schedule),
             teacher-forced agreement on the held-out teacher states every --every steps
             (agreement_by_step.json; the stage's steps count the base run's too); with --sft-episodes N
             on the expert's first N dialogues of the same seed instead (played into --out's sft/: the
             base run's are their first ones)
    scratch  a fresh scratch model of another depth (the pipeline's builder, as --scratch-layers), the
             base run's schedule, agreement every --every steps
    dagger   --rounds DAgger rounds of the pipeline (trainers.sead.train.dagger_round) from the checkpoint,
             the labelled sessions --dagger-share of each round's rows
    summary  one row per eval's NAME_fit.json given (--fits): held-out and training-chat agreement, the
             on-policy agreement of the DAgger round that made it (the folder's agreement.json), the
             near-repeat share and greedy CR (NAME.json) of its greedy dialogues; no --base/--out
    eval     greedy held-out CR of a checkpoint on the preset's 240 starts (results/NAME.json, for
             `dialogue-gym compare`) and its agreement on held-out and training dialogues with the greedy
             dialogues' conversation audit (near-repeat share, ...) and on-policy agreement (how often
             its greedy turn was the expert's label at the state it reached; NAME_fit.json)
    fit      only the agreement of eval (NAME_fit.json), for a checkpoint whose greedy dialogues were
             saved before (nothing is played); --played AGREEMENT.json: the checkpoint played the first
             DAgger round recorded there, whose on-policy agreement is then its own

One torch thread each (the trainers' --threads 1), so two can share a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path


def setup(base: Path, out: Path, sft_episodes: int | None = None, **overrides):
    import torch

    torch.set_num_threads(1)
    from dialogue_gym.seeding import mix_seed
    from trainers.common import RunDir
    from trainers.common.sft import expert_dataset
    from trainers.sead.config import build_config
    from trainers.sead.train import ENV_ID, SFT_STREAM, eval_env_kwargs, teacher_chats

    for sub in ("results", "sft", "checkpoints"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    base_config = json.loads((base / "config.json").read_text())
    config = build_config("cpu-lm-scratch", run_dir=str(out), threads=1, seed=base_config["seed"], **overrides)
    run = RunDir(out)
    # The same seed plays the same starts in the same order (dialogue_gym.evaluation.EvaluationOrder), so
    # the base run's dialogues are the first ones of a longer run, and its training chats stay a prefix.
    episodes, folder = (base_config["sft_episodes"], base / "sft") if sft_episodes in (None, base_config["sft_episodes"]) else (sft_episodes, out / "sft")
    chats = expert_dataset(ENV_ID, config.sft_expert, episodes, mix_seed(config.seed, SFT_STREAM), folder, eval_env_kwargs(config))["messages"]
    return config, run, chats, teacher_chats(config, run)


def train_with_agreement(args, init: str, chats, held, base_steps: int) -> None:
    """SFT of ``init`` on ``chats`` as trainers.common.sft.sft_lm trains (packed sessions, completion-only
    loss, cosine schedule), with held-out agreement every ``args.every`` steps."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from dialogue_gym.backends.transformers_backend import TransformersBackend
    from trainers.common.sft import conversation_rows, pack_session, teacher_forced_agreement
    from trainers.sead.train import UTTERANCE_END

    loaded = TransformersBackend(init)
    tokenizer, out, stages = loaded.tokenizer, Path(args.out), []
    examples = [example for chat in chats for example in pack_session(conversation_rows(chat), tokenizer)]

    def measure(model, step: int) -> None:
        result = teacher_forced_agreement(model, tokenizer, held, 24, utterance_end=UTTERANCE_END)
        model.train()
        stages.append({"stage": "sft", "steps": base_steps + step, **result})
        (out / "results" / "agreement_by_step.json").write_text(json.dumps({"expert": "adaptive", "stages": stages}, indent=1) + "\n")
        print(f"step {base_steps + step}: agreement {result['agreement']:.3f} ({time.strftime('%H:%M:%S')})", flush=True)

    class Every(TrainerCallback):
        def on_step_end(self, _args, state, control, model=None, **kwargs):
            if state.global_step % args.every == 0:
                measure(model, state.global_step)

    measure(loaded.model, 0)
    config = SFTConfig(
        output_dir=str(out / "trainer"), learning_rate=args.lr, per_device_train_batch_size=16, gradient_accumulation_steps=1,
        max_steps=args.steps, lr_scheduler_type="cosine", warmup_steps=args.warmup, logging_steps=1, save_strategy="no", report_to=[],
        seed=args.seed, data_seed=args.seed, max_length=None, completion_only_loss=True, use_cpu=True, bf16=False, gradient_checkpointing=False,
    )
    trainer = SFTTrainer(model=loaded.model, args=config, train_dataset=Dataset.from_list(examples), processing_class=tokenizer, callbacks=[Every()])
    trainer.train()
    final = out / "checkpoints" / "sft"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    for name in ("chat_template.jinja", "generation_config.json"):
        if (Path(init) / name).exists() and not (final / name).exists():
            shutil.copy(Path(init) / name, final / name)
    if args.steps % args.every:
        measure(trainer.model, args.steps)


def summary_table(fits: list[Path]) -> str:
    """The table of ``summary`` (see the module's docstring); turns 8+ pools turns 8 on, weighted by count."""
    lines = [
        "| model | held-out agreement | utterance | turns 8+ | training chats | on-policy | near-repeat turns | greedy CR [95%] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fit_path in fits:
        fit = json.loads(fit_path.read_text())
        name = fit_path.name.removesuffix("_fit.json")
        headline = json.loads((fit_path.parent / f"{name}.json").read_text())["headline"][name]["cr"]
        per_turn, counts = fit["agreement_per_turn"], fit["turns_per_turn"]
        late = sum(a * n for a, n in zip(per_turn[8:], counts[8:])) / max(1, sum(counts[8:]))
        rounds = fit_path.parent / "agreement.json"
        # The round whose checkpoint this is: its on-policy agreement is that of the model that played it.
        played = [s for s in json.loads(rounds.read_text())["stages"] if "on_policy_agreement" in s] if rounds.exists() else []
        on_policy = f"{played[-1]['on_policy_agreement']:.3f} ({played[-1]['on_policy_turns']} turns)" if played and "dagger" in fit["checkpoint"] else ""
        if "on_policy_agreement" in fit:  # the model's own play: eval's held-out starts, or a round it played (fit --played)
            on_policy = f"{fit['on_policy_agreement']:.3f} ({fit['on_policy_turns']} turns, {fit['on_policy_starts']})"
        repeats = f"{fit['audit']['turn:near_repeat']:.3f}" if "audit" in fit else ""  # fit: no dialogues played
        # an eval on more starts writes into an eval<N>/ folder of its run: the run names the row
        run = fit_path.parent.parent if fit_path.parent.name.startswith("eval") else fit_path.parent
        lines.append(
            f"| {run.name}/{name} | {fit['agreement']:.3f} | {fit['utterance_agreement']:.3f} | {late:.3f} | {fit['train_agreement']:.3f} | "
            f"{on_policy} | {repeats} | {headline['value']:.3f} [{headline['low']:.3f}, {headline['high']:.3f}] |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("command", choices=("more", "scratch", "dagger", "eval", "fit", "summary"))
    parser.add_argument("--base", type=Path, help="a finished cpu-lm-scratch run folder (every command but summary)")
    parser.add_argument("--out", type=Path, help="where results go (every command but summary)")
    parser.add_argument("--fits", nargs="+", type=Path, default=[], help="summary: NAME_fit.json files that eval wrote")
    parser.add_argument("--checkpoint", help="more/dagger/eval: the model folder (default: the base run's checkpoints/sft)")
    parser.add_argument("--name", default="after", help="eval: the results file's name")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--every", type=int, default=200)
    parser.add_argument("--layers", type=int, default=4, help="scratch: transformer layers")
    parser.add_argument("--rounds", type=int, default=2, help="dagger: rounds of --episodes played starts and --steps steps at peak rate --lr each")
    parser.add_argument("--episodes", type=int, default=200, help="dagger: starts the model plays per round")
    parser.add_argument("--dagger-share", type=float, default=0.0, help="dagger: share of a round's rows that are labelled states (0: each labelled session once)")
    parser.add_argument("--sft-episodes", type=int, help="more: train on the expert's first N dialogues (default: the base run's)")
    parser.add_argument("--played", type=Path, help="fit: the agreement.json of a DAgger run whose first round --checkpoint played")
    parser.add_argument("--checkpoint-steps", type=int, help="more/dagger: the SFT steps behind --checkpoint, for the rows' step counts (default: the base run's sft_steps)")
    parser.add_argument("--eval-episodes", type=int, default=240, help="eval/fit: held-out starts (the preset's 240; the teacher's dialogues on them score agreement)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "summary":
        print(summary_table(args.fits))
        return 0
    if args.base is None or args.out is None:
        parser.error(f"{args.command} needs --base (a finished cpu-lm-scratch run folder) and --out")
    checkpoint = args.checkpoint or str(args.base / "checkpoints" / "sft")
    base_steps = args.checkpoint_steps if args.checkpoint_steps is not None else json.loads((args.base / "config.json").read_text())["sft_steps"]
    if args.command == "dagger":
        config, run, chats, held = setup(
            args.base, args.out, dagger_rounds=args.rounds, dagger_episodes=args.episodes, dagger_steps=args.steps, dagger_learning_rate=args.lr,
            dagger_share=args.dagger_share,
        )
    elif args.command in ("eval", "fit"):
        config, run, chats, held = setup(args.base, args.out, eval_episodes=args.eval_episodes)
    else:
        config, run, chats, held = setup(args.base, args.out, sft_episodes=args.sft_episodes)
    if args.command == "more":
        train_with_agreement(args, checkpoint, chats, held, base_steps)
    elif args.command == "scratch":
        from dialogue_gym.backends.tiny import build_tiny_chat_model
        from trainers.sead.config import SCRATCH_MODEL

        init = args.out / "scratch_model"
        if not (init / "config.json").exists():
            build_tiny_chat_model(init, seed=args.seed, corpus=[m["content"] for chat in chats for m in chat], **{**SCRATCH_MODEL, "num_hidden_layers": args.layers})
        train_with_agreement(args, str(init), chats, held, 0)
    elif args.command == "dagger":
        from trainers.common.sft import conversation_rows
        from trainers.sead.train import agreement_of, dagger_round

        sessions, current = [conversation_rows(chat) for chat in chats], Path(checkpoint)
        stages = [{"stage": "sft", "steps": base_steps, **agreement_of(config, run, current, held)}]
        for round_ in range(args.rounds):
            current, dagger = dagger_round(config, run, round_, current, sessions)
            stages.append({"stage": f"dagger_{round_}", **dagger, **agreement_of(config, run, current, held)})
            (args.out / "results" / "agreement.json").write_text(json.dumps({"expert": config.sft_expert, "stages": stages}, indent=1) + "\n")
            print(f"dagger_{round_}: on-policy agreement {dagger['on_policy_agreement']:.3f}, held-out {stages[-1]['agreement']:.3f}", flush=True)
    elif args.command == "fit":
        from trainers.sead.train import agreement_of

        fit = agreement_of(config, run, Path(checkpoint), held, [chats[index] for index in range(min(len(held), len(chats)))])
        if args.played is not None:
            round_ = next(stage for stage in json.loads(args.played.read_text())["stages"] if "on_policy_agreement" in stage)
            fit.update(on_policy_agreement=round_["on_policy_agreement"], on_policy_turns=round_["on_policy_turns"], on_policy_starts="round's training starts")
        (args.out / "results" / f"{args.name}_fit.json").write_text(json.dumps({"checkpoint": checkpoint, **fit}, indent=1) + "\n")
        print(f"{args.name}: agreement {fit['agreement']:.3f} held-out, {fit['train_agreement']:.3f} on training dialogues")
    else:
        from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
        from dialogue_gym.scenarios.sead.policies import make_policy
        from trainers.common.dagger import ExpertLabels, label_agreement
        from trainers.sead.train import agreement_of, held_out_evaluation, make_policy_for

        fitted = [chats[index] for index in range(min(len(held), len(chats)))]
        # The expert labels each state the model reaches as it plays (what a DAgger round records); what
        # is said, and so the dialogues and CR, are the model's alone.
        policy = make_policy_for(config, run, None, checkpoint)
        policy.greedy = True
        seat = ExpertLabels(policy, make_policy("agent", config.sft_expert, SeadGame(SeadConfig(max_agent_turns=config.max_agent_turns)).library))
        summary = held_out_evaluation(config, seat, args.name, run, args.name)
        on_policy = {"on_policy_agreement": label_agreement(seat.sessions), "on_policy_turns": sum(map(len, seat.sessions)), "on_policy_starts": "held-out"}
        fit = agreement_of(config, run, Path(checkpoint), held, fitted)
        (args.out / "results" / f"{args.name}_fit.json").write_text(json.dumps({"checkpoint": checkpoint, **fit, **on_policy, "audit": summary["audit"]}, indent=1) + "\n")
        print(
            f"{args.name}: greedy CR {summary['cr']:.3f} [{summary['cr_low']:.3f}, {summary['cr_high']:.3f}]; agreement {fit['agreement']:.3f} held-out, "
            f"{fit['train_agreement']:.3f} on training dialogues, {on_policy['on_policy_agreement']:.3f} on its own held-out states; "
            f"near-repeat turns {summary['audit']['turn:near_repeat']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
