"""Every file of a finished TRACER and RL-ADA ``cpu-lm-scratch`` run folder, cut short in turn (issue 43,
item 2): the resumed run either goes on (the file is rewritten, or re-made from what the folder still
holds) or stops with exit 2 and one line naming the file, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from trainers.rlada import train as rlada_train  # noqa: E402
from trainers.rlada.config import build_config as rlada_config  # noqa: E402
from trainers.tracer import train as tracer_train  # noqa: E402
from trainers.tracer.config import build_config as tracer_config  # noqa: E402

RUNS = {
    "tracer": (tracer_train, lambda folder: tracer_config(
        "cpu-lm-scratch", run_dir=str(folder), sft_steps=2, sft_batch_size=2, iterations=1, sessions_per_iteration=1, group_size=2,
        max_user_turns=2, max_new_tokens=4, eval_sessions=2, eval_batch=2, eval_rollouts=1, threads=1, plots=False,
    ), "iterations"),
    "rlada": (rlada_train, lambda folder: rlada_config(
        "cpu-lm-scratch", run_dir=str(folder), copy_steps=2, sft_episodes=2, sft_epochs=1, warmup_agent_iterations=1, warmup_customer_iterations=1,
        warmup_batch=2, group_size=2, episodes_per_scenario=1, gym_iterations=1, gym_starts=2, max_agent_turns=2, agent_max_new_tokens=4,
        heldout_repeats=1, threads=1, plots=False,
    ), "gym_iterations"),
}
"""Each trainer's preset at its smallest, and the config key one more iteration of which makes a resume
read the folder's checkpoints and state."""


def _cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if len(data) > 1 else b"\xff")


@pytest.mark.slow
@pytest.mark.parametrize("trainer", list(RUNS))
def test_every_file_of_an_lm_run_cut_short_resumes_or_is_one_line_naming_it(trainer, tmp_path, capsys):
    module, config_of, more = RUNS[trainer]
    finished = module.train(config_of(tmp_path / "run")).path
    finished.joinpath("run.lock").unlink(missing_ok=True)
    names = sorted(str(p.relative_to(finished)) for p in finished.rglob("*") if p.is_file() and p.name != "run.lock")
    capsys.readouterr()
    outcomes, problems = {}, []
    for name in names:
        folder = tmp_path / "cut"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(finished, folder)
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, more: config[more] + 1}))
        _cut_short(folder / name)
        try:
            code = module.main(["--resume", str(folder)])
        except (Exception, SystemExit) as exc:  # noqa: BLE001  (the sweep lists every file whose damage escapes as a traceback)
            problems.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
        outcomes[name] = code
        if code == 2 and not (len(errors) == 1 and str(folder / name) in errors[0]):
            problems.append(f"{name}: exit 2 with {errors}")
        elif code not in (0, 2):
            problems.append(f"{name}: exit {code} with {errors}")
    assert problems == [], "\n".join(problems)
    assert 2 in outcomes.values()  # the sweep reached files that a resume must read
