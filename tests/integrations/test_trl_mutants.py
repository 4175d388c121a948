"""The TRL integration's rollout seeds, the policy's training mode and the bank tools' optional
arguments, by hand (issue 43 item 6, dialogue_gym/integrations/trl.py): each turn of each completion
is sampled from its own seed, the model goes back to training mode after a rollout, and an optional
tool argument the model gives as null never reaches the env."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_trl_budget import NeverStops  # noqa: E402

from dialogue_gym.integrations.trl import (  # noqa: E402
    environment_dataset,
    environment_factory,
    make_rollout_func,
    rollout_prompt,
)

ENV = "TRACER-UserSim-v0"
TURN = 4


@pytest.fixture
def play(scenario_model_dir, monkeypatch):
    from transformers import AutoTokenizer

    import dialogue_gym.backends.transformers_backend as transformers_backend

    monkeypatch.setattr(transformers_backend, "TransformersBackend", NeverStops)
    tokenizer = AutoTokenizer.from_pretrained(str(scenario_model_dir))

    def run(step, prompts, model=None):
        """The seeds asked for, in request order, by one rollout of ``prompts`` at global step ``step``."""
        NeverStops.seeds = []
        model = model or SimpleNamespace(training=False, eval=lambda: None, train=lambda: None)
        trainer = SimpleNamespace(
            processing_class=tokenizer, model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"),
            state=SimpleNamespace(global_step=step), max_completion_length=3 * TURN + 60, temperature=1.0, top_p=1.0,
        )
        make_rollout_func(ENV, max_turn_tokens=TURN)(prompts, trainer)
        return list(NeverStops.seeds)

    return run


def test_every_turn_of_every_completion_and_step_is_sampled_from_its_own_seed(play):
    group = [rollout_prompt(ENV, 0, seed=5)] * 2
    seeds = play(0, group)
    # two copies of one start state, batched turn by turn: slot 0 then slot 1, for at least two turns
    assert len(seeds) >= 4 and len(seeds) % 2 == 0
    # a GRPO group differs only through sampling: no two requests of the rollout share a seed
    # (the same seed for both copies would make them one dialogue; for every turn, one move repeated)
    assert len(set(seeds)) == len(seeds)
    # the next training step samples afresh, and the same step replays the same seeds
    later = play(1, group)
    assert not set(seeds) & set(later)
    assert play(0, group) == seeds


class Mode:
    """A model whose ``training`` flag follows ``eval()`` and ``train()`` as torch's does, recording the calls."""

    def __init__(self, training):
        self.training, self.calls = training, []

    def eval(self):
        self.training = False
        self.calls.append("eval")

    def train(self):
        self.training = True
        self.calls.append("train")


@pytest.mark.parametrize("training, calls", [(True, ["eval", "train"]), (False, ["eval"])])
def test_the_policy_generates_in_eval_mode_and_goes_back_to_the_mode_it_was_in(play, training, calls):
    model = Mode(training)
    play(0, [rollout_prompt(ENV, 0, seed=5)], model)
    assert model.calls == calls and model.training is training


def test_an_optional_bank_tool_argument_given_as_null_is_not_sent_to_the_env():
    environment = environment_factory("RLADA-Banking-v0")()
    row = environment_dataset("RLADA-Banking-v0", 1, seed=2)[0]
    environment.reset(**row)
    account = json.dumps(row["prompt"]).split("matched account ")[1][:10]
    # get_transactions takes account_id (required), days and status (optional, None by default): a tool call
    # that gives the optional ones as null (as TRL passes a model's JSON arguments) says only the account
    environment.get_transactions(account_id=account, days=None, status=None)
    (move,) = [json.loads(turn.raw) for turn in environment.trajectory.turns_of("agent")]
    assert move["content"] == "get_transactions" and move["tool_args"] == {"account_id": account}
