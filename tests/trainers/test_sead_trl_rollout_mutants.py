"""SEAD's TRL rollout, around the generation itself (issue 43 item 6, trainers/sead/trl_rollout.py): each
call of a batch plays its own initial profile, shared by the generations of its group, and the trainer's
model is handed back in the mode it came in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _rollout(tiny_model_dir, monkeypatch, training: bool):
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
    make_rollout_func(max_agent_turns=2, max_new_tokens=4)([call_prompt(0), call_prompt(5)], trainer)
    return games, model


def test_each_call_plays_its_own_profile_shared_by_its_group(tiny_model_dir, monkeypatch):
    from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame

    games, _ = _rollout(tiny_model_dir, monkeypatch, training=True)
    profiles = [game.trajectory().profile for game in games]
    # two prompts, two generations each: calls 0, 0, 5, 5, each with the stratified evaluation profile of its call
    template = SeadGame(SeadConfig(max_agent_turns=2))
    call_0, call_5 = (template.evaluation_options(call, 0)["profile"] for call in (0, 5))
    assert call_0["state"] != call_5["state"]  # start 0 and start 5 are different initial states
    assert profiles == [call_0, call_0, call_5, call_5]


@pytest.mark.parametrize("training", [True, False])
def test_the_model_is_handed_back_in_the_mode_it_came_in(tiny_model_dir, monkeypatch, training):
    _, model = _rollout(tiny_model_dir, monkeypatch, training)
    assert model.training is training
