"""TRACER's and RL-ADA's trainers pick torch's thread count as SEAD's does (issue 41, item 4): the one
asked for (``--threads``) or the faster on a probe, said on stderr and saved in ``state/threads.json``
(kept on resume; tests/trainers/test_threads.py covers the choice itself)."""

import json

import pytest

torch = pytest.importorskip("torch")

from dialogue_gym.errors import ConfigError  # noqa: E402
from trainers.rlada import config as rlada_config, train as rlada_train  # noqa: E402
from trainers.tracer import config as tracer_config, train as tracer_train  # noqa: E402

TRAINERS = {
    "tracer": (tracer_train, tracer_config.build_config, {"policy": "lm", "model": "tiny"}, {"policy": "strategy"}),
    "rlada": (rlada_train, rlada_config.build_config, {"agent_policy": "lm", "agent_model": "tiny"}, {}),
}


@pytest.fixture(autouse=True)
def keep_torch_threads():
    previous = torch.get_num_threads()
    yield
    torch.set_num_threads(previous)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_lm_run_sets_says_and_saves_the_requested_thread_count(trainer, tmp_path, monkeypatch, capsys):
    module, build, lm, _ = TRAINERS[trainer]
    monkeypatch.setattr(module, "_train", lambda *args: None)  # the wiring only: no episodes
    run = module.train(build("cpu-strategy", run_dir=str(tmp_path / "run"), threads=1, **lm))
    assert torch.get_num_threads() == 1
    assert json.loads((run.path / "state" / "threads.json").read_text()) == {"threads": 1, "chosen": "torch threads: 1 (--threads)"}
    assert "torch threads: 1 (--threads)" in capsys.readouterr().err


@pytest.mark.parametrize("trainer", TRAINERS)
def test_without_threads_the_probe_chooses_and_a_resume_keeps_its_choice(trainer, tmp_path, monkeypatch, capsys):
    from trainers.common import threads

    module, build, lm, _ = TRAINERS[trainer]
    monkeypatch.setattr(module, "_train", lambda *args: None)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "probe_seconds", lambda n: 0.01 if n == 1 else 0.03)  # a loaded machine: 1 is faster
    config = build("cpu-strategy", run_dir=str(tmp_path / "run"), **lm)
    module.train(config)
    assert torch.get_num_threads() == 1 and "torch threads: 1 (measured per probe: 1 thread 10.0 ms, 2 threads 30.0 ms" in capsys.readouterr().err
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "probe_seconds", lambda n: pytest.fail("a resumed run is not probed again"))
    module.train(config, resume=True)
    assert torch.get_num_threads() == 1 and "kept on resume" in capsys.readouterr().err


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_strategy_run_leaves_torch_alone(trainer, tmp_path, monkeypatch):
    module, build, _, strategy = TRAINERS[trainer]
    monkeypatch.setattr(module, "_train", lambda *args: None)
    torch.set_num_threads(2)
    run = module.train(build("cpu-strategy", run_dir=str(tmp_path / "run"), threads=1, **strategy))
    assert torch.get_num_threads() == 2 and not (run.path / "state" / "threads.json").exists()


@pytest.mark.parametrize("build", [tracer_config.build_config, rlada_config.build_config], ids=["tracer", "rlada"])
def test_a_negative_thread_count_is_refused_by_name(build):
    with pytest.raises(ConfigError, match="threads"):
        build("cpu-strategy", threads=-1)
