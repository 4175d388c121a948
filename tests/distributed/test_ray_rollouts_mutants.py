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
