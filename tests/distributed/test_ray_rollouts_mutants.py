"""collect_rollouts' arguments: which values pass the checks (fractional CPUs and GPUs, no GPU at all),
which are refused before Ray starts, and the defaults it shares with evaluate. Ray is made unimportable:
a call whose arguments pass the checks gets as far as importing Ray."""

import inspect
import sys

import pytest

from dialogue_gym.distributed import collect_rollouts
from dialogue_gym.distributed.ray_rollouts import ChunkDealer
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.evaluation import evaluate


@pytest.fixture
def no_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"num_cpus_per_worker": 0.5}, {"num_cpus_per_worker": 0}, {"num_gpus_per_worker": 0.25}, {"num_gpus_per_worker": 1},
     {"seed": 0}, {"episodes": 1, "num_workers": 1, "chunk_size": 1, "batch_size": 1}],
)
def test_arguments_that_pass_the_checks_get_as_far_as_ray(no_ray, kwargs):
    with pytest.raises(DependencyNotInstalled, match="Ray rollouts"):
        collect_rollouts("SEAD-Outbound-v0", "sop", **{"episodes": 4, **kwargs})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"episodes": 2.5}, r"episodes must be an int >= 1, got 2.5"),
        ({"episodes": "3"}, r"episodes must be an int >= 1, got '3'"),
        ({"episodes": True}, r"episodes must be an int >= 1, got True"),
        ({"seed": -1}, r"seed must be an int >= 0, got -1"),
        ({"batch_size": 0}, r"batch_size must be an int >= 1, got 0"),
        ({"num_cpus_per_worker": -0.5}, r"num_cpus_per_worker must be a number >= 0, got -0.5"),
        ({"num_gpus_per_worker": "1"}, r"num_gpus_per_worker must be a number >= 0, got '1'"),
        ({"env_id": 7}, r"7 is not a registered id"),
    ],
)
def test_arguments_refused_before_ray_starts(no_ray, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        collect_rollouts(**{"env_id": "SEAD-Outbound-v0", "agent": "sop", "episodes": 4, **kwargs})


def test_the_defaults_it_shares_with_evaluate_are_evaluates():
    """Its docstring says "as for evaluate": the same seed, batch size, learner and isolation when none is given."""
    ours, theirs = inspect.signature(collect_rollouts).parameters, inspect.signature(evaluate).parameters
    for name in ("seed", "batch_size", "learner", "isolate", "env_kwargs", "agent_backend"):
        assert ours[name].default == theirs[name].default, name


def test_the_dealer_hands_out_each_chunk_once_in_order():
    dealer = ChunkDealer([(0, 3), (3, 3), (6, 1)])
    assert [dealer.take() for _ in range(5)] == [(0, 0, 3), (1, 3, 3), (2, 6, 1), None, None]


class _FakeRay:
    """Ray's calls that collect_rollouts makes, in process: actors are plain objects (their methods run when
    called ``.remote``), and what it asked Ray for is recorded (init arguments, each actor's resources, kills)."""

    def __init__(self):
        self.init_kwargs, self.actors, self.killed = None, [], []

    def is_initialized(self):
        return self.init_kwargs is not None

    def init(self, **kwargs):
        self.init_kwargs = kwargs

    def remote(self, **resources):
        fake = self

        class Handle:
            def __init__(self, instance):
                self.instance = instance

            def __getattr__(self, name):
                method = getattr(self.instance, name)
                return type("Method", (), {"remote": staticmethod(method)})

        class ActorClass:
            def __init__(self, cls):
                self.cls = cls

            def remote(self, *args):
                handle = Handle(self.cls(*args))
                fake.actors.append((self.cls.__name__, resources, handle))
                return handle

        return ActorClass

    def get(self, refs, timeout=None):
        return refs

    def kill(self, actor):
        self.killed.append(actor)


def test_the_dealer_takes_no_cpu_each_worker_its_share_and_every_actor_is_stopped(monkeypatch):
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    collected = collect_rollouts("SEAD-Outbound-v0", "sop", 5, seed=2, num_workers=3, chunk_size=2, ray_init={"num_cpus": 2})
    assert fake.init_kwargs == {"num_cpus": 2}
    # 5 episodes in chunks of 2: three chunks, so three workers, each reserving the default 1 CPU and no GPU
    assert [(name, resources) for name, resources, _ in fake.actors] == [
        ("ChunkDealer", {"num_cpus": 0}), *[("RolloutWorker", {"num_cpus": 1, "num_gpus": 0})] * 3
    ]
    assert sorted(map(id, fake.killed)) == sorted(id(handle) for _, _, handle in fake.actors)
    assert [t.to_dict() for t in collected] == [t.to_dict() for t in evaluate("SEAD-Outbound-v0", "sop", 5, seed=2)]


def test_the_default_chunk_size_gives_every_worker_work_up_to_a_batch():
    """chunk_size = min(batch_size, ceil(episodes / num_workers)), at least 1: the dealer's chunks."""
    for episodes, num_workers, batch_size, chunks in [
        (5, 4, 32, [(0, 2), (2, 2), (4, 1)]),  # ceil(5 / 4) = 2
        (100, 2, 32, [(0, 32), (32, 32), (64, 32), (96, 4)]),  # a batch caps the chunk
        (3, 8, 32, [(0, 1), (1, 1), (2, 1)]),  # more workers than episodes: chunks of one
    ]:
        fake = _FakeRay()
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(sys.modules, "ray", fake)
            patch.setattr(ChunkDealer, "take", lambda self: None)  # deal nothing: only the chunks are looked at
            collect_rollouts("SEAD-Outbound-v0", "sop", episodes, num_workers=num_workers, batch_size=batch_size)
        dealer = fake.actors[0][2].instance
        assert dealer.chunks == chunks and len(fake.actors) == 1 + min(num_workers, len(chunks))
