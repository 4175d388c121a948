"""The TRL rollout's ``env_mask`` against the games it played: 1 exactly on the agent's generated
tokens, turn by turn, and 0 on the user's replies between them."""

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from masks import runs  # noqa: E402


def test_env_mask_is_one_on_agent_tokens_and_zero_on_user_replies(tiny_model_dir, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dialogue_gym.scenarios.sead.game import SeadGame
    from trainers.sead.trl_rollout import call_prompt, make_rollout_func

    games = []
    spawn = SeadGame.spawn

    def recording_spawn(self):
        game = spawn(self)
        games.append(game)
        return game

    monkeypatch.setattr(SeadGame, "spawn", recording_spawn)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    trainer = SimpleNamespace(
        processing_class=tokenizer, model=model, num_generations=2, state=SimpleNamespace(global_step=0),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"),
    )
    output = make_rollout_func(max_agent_turns=3, max_new_tokens=6)([call_prompt(0), call_prompt(1)], trainer)
    assert len(games) == len(output["env_mask"]) == 4
    checked_user_turns = 0
    for game, ids, mask, logprobs in zip(games, output["completion_ids"], output["env_mask"], output["logprobs"]):
        trajectory = game.trajectory()
        agent_turns = trajectory.turns_of("agent")
        learner_runs = [(s, e) for value, s, e in runs(mask) if value == 1]
        # each agent turn is one run of 1s holding exactly its generated ids, in order
        assert [ids[s:e] for s, e in learner_runs] == [turn.token_ids for turn in agent_turns if turn.token_ids]
        assert all(logprobs[i] == 0.0 for i, m in enumerate(mask) if m == 0)
        replies = [turn.text for turn in trajectory.turns_of("user")]
        env_runs = [(s, e) for value, s, e in runs(mask) if value == 0]
        for (s, e), reply in zip(env_runs, replies):
            assert reply in tokenizer.decode(ids[s:e]), (reply, tokenizer.decode(ids[s:e]))
            checked_user_turns += 1
    assert checked_user_turns > 0
