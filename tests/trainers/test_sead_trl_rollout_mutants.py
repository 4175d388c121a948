"""SEAD's TRL rollout, around the generation itself (issue 43 item 6, trainers/sead/trl_rollout.py): each
call of a batch plays its own initial profile, shared by the generations of its group, and the trainer's
model is handed back in the mode it came in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _rollout(tiny_model_dir, monkeypatch, training: bool = True, calls=(0, 5)):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dialogue_gym.scenarios.sead.game import SeadGame
    from trainers.sead.trl_rollout import call_prompt, make_rollout_func

    games = []
    spawn = SeadGame.spawn
    monkeypatch.setattr(SeadGame, "spawn", lambda self: games.append(spawn(self)) or games[-1])
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    model.train(training)
    trainer = SimpleNamespace(
        processing_class=AutoTokenizer.from_pretrained(str(tiny_model_dir)), model=model, num_generations=2,
        state=SimpleNamespace(global_step=0), accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"),
    )
    output = make_rollout_func(max_agent_turns=2, max_new_tokens=4)([call_prompt(call) for call in calls], trainer)
    return games, model, output


def test_each_call_plays_its_own_profile_shared_by_its_group(tiny_model_dir, monkeypatch):
    from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame

    games, _, _ = _rollout(tiny_model_dir, monkeypatch)
    profiles = [game.trajectory().profile for game in games]
    # two prompts, two generations each: calls 0, 0, 5, 5, each with the stratified evaluation profile of its call
    template = SeadGame(SeadConfig(max_agent_turns=2))
    call_0, call_5 = (template.evaluation_options(call, 0)["profile"] for call in (0, 5))
    assert call_0["state"] != call_5["state"]  # start 0 and start 5 are different initial states
    assert profiles == [call_0, call_0, call_5, call_5]


@pytest.mark.parametrize("training", [True, False])
def test_the_model_is_handed_back_in_the_mode_it_came_in(tiny_model_dir, monkeypatch, training):
    _, model, _ = _rollout(tiny_model_dir, monkeypatch, training)
    assert model.training is training


def test_prompts_trl_already_repeated_per_generation_are_not_expanded_again(tiny_model_dir, monkeypatch):
    games, _, output = _rollout(tiny_model_dir, monkeypatch, calls=(0, 0, 5, 5))
    assert len(games) == len(output["completion_ids"]) == 4


def test_a_call_whose_text_the_template_changed_stops_after_that_turn(tiny_model_dir, monkeypatch):
    # The template did not render the agent's text back (_env_tokens finds nothing): the call's sequence
    # ends with that turn's generated ids, with no user tokens after them and no further agent turn.
    from trainers.sead import trl_rollout

    monkeypatch.setattr(trl_rollout, "_env_tokens", lambda *args: None)
    games, _, output = _rollout(tiny_model_dir, monkeypatch)
    for game, ids, mask in zip(games, output["completion_ids"], output["env_mask"]):
        first = game.trajectory().turns_of("agent")[0]
        assert ids == list(first.token_ids) and mask == [1] * len(ids)
        assert len(game.trajectory().turns_of("agent")) == 1


class Tokenizer:
    """A character-level stand-in: one id per character, 0 the end of sequence "$", and 9 a start token
    it adds only when asked for special tokens."""

    eos_token, eos_token_id = "$", 0

    def __init__(self, rendered: str):
        self.rendered = rendered

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return self.rendered

    def __call__(self, text, add_special_tokens):
        return {"input_ids": [9] * add_special_tokens + [ord(c) for c in text]}


def test_the_tokens_after_the_agents_turn_by_hand():
    from trainers.sead.trl_rollout import _env_tokens

    tokenizer = Tokenizer("<a>Hi$<u>No<a>")
    # after the last "Hi": "$<u>No<a>"; the agent's turn already ended with the end-of-sequence id, so "$" is not repeated
    assert _env_tokens(tokenizer, [], "Hi", [5, 6, 0]) == [ord(c) for c in "<u>No<a>"]
    assert _env_tokens(tokenizer, [], "Hi", [5, 0, 6]) == [ord(c) for c in "$<u>No<a>"]  # cut off at the token limit: "$" is the template's
    assert _env_tokens(tokenizer, [], "Bye", [0]) is None and _env_tokens(tokenizer, [], "", [0]) is None


def test_the_default_rollout_generates_32_tokens_at_temperature_1(tiny_model_dir, monkeypatch):
    # make_rollout_func's signature: max_new_tokens=32, temperature=1.0 (and no nucleus cut)
    from trainers.sead import trl_rollout

    class Built(Exception):
        pass

    seen = {}

    def backend(model, **kwargs):
        seen.update(kwargs)
        raise Built

    monkeypatch.setattr(trl_rollout, "TransformersBackend", backend)
    trainer = SimpleNamespace(processing_class=None, model=None, accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"))
    with pytest.raises(Built):
        trl_rollout.make_rollout_func()([trl_rollout.call_prompt(0)], trainer)
    assert (seen["max_new_tokens"], seen["temperature"], seen["top_p"]) == (32, 1.0, 1.0)
