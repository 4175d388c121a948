"""The TRL rollout at the edges of ``max_completion_length`` (issue 33): a counterpart reply that
exactly fills the budget is kept (one token more and it is dropped), and a budget that is not a
multiple of the per-turn budget clips the last turn of a model that never stops to what is left."""

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.backends import GenerationOutput  # noqa: E402
from dialogue_gym.integrations.common import encode, render  # noqa: E402
from dialogue_gym.integrations.trl import make_rollout_func, rollout_prompt  # noqa: E402
from masks import runs  # noqa: E402

ENV = "TRACER-UserSim-v0"
TURN = 4
"""max_turn_tokens: every turn of the model below is exactly this long unless the budget cuts it."""


class NeverStops:
    """A backend whose model never ends its turn: it generates exactly ``max_new_tokens`` copies of
    one token, each with logprob -0.5, and records every request's ``max_new_tokens`` and seed."""

    asked: list[int] = []
    seeds: list[int] = []

    def __init__(self, model, tokenizer, **settings):
        self.tokenizer = tokenizer
        self.word = encode(tokenizer, "Hello")[0]

    def generate(self, requests):
        outputs = []
        for request in requests:
            count = request.sampling.max_new_tokens
            NeverStops.asked.append(count)
            NeverStops.seeds.append(request.sampling.seed)
            ids = [self.word] * count
            prompt = encode(self.tokenizer, render(self.tokenizer, request.messages))
            outputs.append(GenerationOutput(self.tokenizer.decode(ids), ids, [-0.5] * count, prompt))
        return outputs


@pytest.fixture
def rollout(scenario_model_dir, monkeypatch):
    from transformers import AutoTokenizer

    import dialogue_gym.backends.transformers_backend as transformers_backend

    monkeypatch.setattr(transformers_backend, "TransformersBackend", NeverStops)
    tokenizer = AutoTokenizer.from_pretrained(str(scenario_model_dir))
    model = SimpleNamespace(training=False, eval=lambda: None, train=lambda: None)

    def play(budget):
        NeverStops.asked = []
        trajectories = []
        trainer = SimpleNamespace(
            processing_class=tokenizer, model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"),
            state=SimpleNamespace(global_step=0), max_completion_length=budget, temperature=1.0, top_p=1.0,
        )
        output = make_rollout_func(ENV, max_turn_tokens=TURN, on_trajectory=trajectories.append)([rollout_prompt(ENV, 0, seed=5)], trainer)
        return output, trajectories[0], list(NeverStops.asked), tokenizer

    return play


def _first_reply(play):
    """The number of tokens between the model's first and second turn, from a rollout with no budget,
    checked against the chat: they hold the counterpart's first reply."""
    output, trajectory, asked, tokenizer = play(None)
    mask = output["env_mask"][0]
    shape = [(value, end - start) for value, start, end in runs(mask)]
    assert shape[0] == (1, TURN) and shape[1][0] == 0 and asked[:2] == [TURN, TURN]
    reply = trajectory.turns[1].text
    assert reply and reply in tokenizer.decode(output["completion_ids"][0][TURN : TURN + shape[1][1]])
    return shape[1][1]


def test_a_reply_that_exactly_fills_the_budget_is_kept_and_one_token_more_is_dropped(rollout):
    heard = _first_reply(rollout)
    output, trajectory, asked, _ = rollout(TURN + heard)
    # the reply fills the budget to the last token: kept, masked, and nothing is generated after it
    assert output["env_mask"][0] == [1] * TURN + [0] * heard
    assert len(output["completion_ids"][0]) == TURN + heard and asked == [TURN]
    assert output["logprobs"][0] == [-0.5] * TURN + [0.0] * heard
    # the dialogue is finished by the rules with the learner silent, and scored
    assert trajectory.outcome is not None and output["reward"][0] == trajectory.rewards["user"]

    output, _, asked, _ = rollout(TURN + heard - 1)
    # one token short: the reply does not fit, so it is left out whole (never cut) and the model's turn ends the completion
    assert output["env_mask"][0] == [1] * TURN and output["completion_ids"][0] == output["completion_ids"][0][:TURN]
    assert asked == [TURN]


@pytest.mark.parametrize("left", [1, 3])
def test_a_budget_that_is_not_a_multiple_of_the_turn_clips_the_last_turn_to_what_is_left(rollout, left):
    heard = _first_reply(rollout)
    budget = TURN + heard + left
    output, trajectory, asked, tokenizer = rollout(budget)
    # the second turn is asked for only the tokens left, and the model that never stops uses them all
    assert asked == [TURN, left]
    assert len(output["completion_ids"][0]) == budget
    assert output["env_mask"][0] == [1] * TURN + [0] * heard + [1] * left
    assert output["logprobs"][0] == [-0.5] * TURN + [0.0] * heard + [-0.5] * left
    # the clipped turn is what the env was given: its record holds exactly those tokens
    learner_turns = [turn for turn in trajectory.turns_of("user") if turn.token_ids]
    assert [len(turn.token_ids) for turn in learner_turns] == [TURN, left]
    assert learner_turns[1].text == tokenizer.decode(output["completion_ids"][0][-left:])
