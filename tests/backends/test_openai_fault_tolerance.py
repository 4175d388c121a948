"""A 200-episode evaluation against a server that fails 20% of requests (5xx, 429, stalls past the
client timeout): every episode comes back, complete or failed with its cause; retries are bounded."""

import json

import pytest

from dialogue_gym import cli
from dialogue_gym.evaluation import Evaluator, evaluate, load_trajectories
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.types import Outcome

GO_ON = render_user_output("Hm. Go on.", (2, 2, 2), 0)
ACCEPT = render_user_output("Fine, I will claim it.", (3, 2, 3), 1)
GAME_OUTCOMES = {Outcome.SUCCESS, Outcome.HANGUP, Outcome.TIMEOUT, Outcome.INVALID}


def user_reply(body):
    """Owners with an even request seed accept on their third turn; the others never do."""
    turn = sum(m["role"] == "assistant" for m in body["messages"]) + 1
    return ACCEPT if turn == 3 and body["seed"] % 2 == 0 else GO_ON


def user_backend(server, **kwargs):
    return {"name": "openai", "model": server.model, "base_url": server.base_url, "api_key_env": None,
            "max_concurrency": 16, "timeout": 0.2, "backoff_base": 0.01, "backoff_max": 0.05, **kwargs}


def test_200_episodes_with_20_percent_failures_complete_or_fail_with_cause(chat_server, tmp_path):
    server = chat_server(user_reply, fail_rate=0.2, stall_share=0.4, stall_s=0.5)
    spec = user_backend(server, max_retries=2)
    out = tmp_path / "run.jsonl"
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 200, seed=0, out=out,
                            env_kwargs={"user": "llm", "user_backend": spec, "max_agent_turns": 3})

    played = Evaluator("SEAD-Outbound-v0", "sop").order(0).starts(200)
    assert [t.meta["start"] for t in trajectories] == played and [t.seed for t in trajectories] == played  # nothing dropped, in order
    assert [t.to_dict() for t in load_trajectories(out)] == [t.to_dict() for t in trajectories]
    failed = [t for t in trajectories if t.outcome is Outcome.BACKEND_FAILURE]
    complete = [t for t in trajectories if t.outcome in GAME_OUTCOMES]
    assert len(failed) + len(complete) == 200 and failed and complete
    for t in failed:
        cause = t.meta["failure"]
        assert cause.startswith("user policy failed: ") and "(after 3 attempts to http://127.0.0.1:" in cause
        assert "HTTP 500" in cause or "HTTP 503" in cause or "HTTP 429" in cause or "timed out after 0.2s" in cause
    for t in complete:
        users = t.turns_of("user")
        assert t.turns[-1].role == "user" and all(turn.raw in (GO_ON, ACCEPT) for turn in users)  # no empty moves
        assert t.outcome is (Outcome.SUCCESS if users[-1].raw == ACCEPT else Outcome.TIMEOUT)
    assert {Outcome.SUCCESS, Outcome.TIMEOUT} <= {t.outcome for t in complete}

    # the server really failed about 20% of what it received, and each request got at most 3 attempts
    injected = sum(o != "ok" for o in server.outcomes)
    assert 0.12 <= injected / len(server.outcomes) <= 0.28
    assert {"stall", "500", "503", "429"} <= set(server.outcomes)
    user_moves = sum(len(t.turns_of("user")) for t in trajectories) + len(failed)
    assert len(server.requests) <= 3 * user_moves

    summary = sead_metrics.summary(trajectories)
    assert (summary["episodes"], summary["completed"], summary["backend_failures"]) == (200, len(complete), len(failed))
    assert summary["backend_failure_rate"] == pytest.approx(len(failed) / 200)
    assert summary["cr"] == pytest.approx(sum(t.outcome is Outcome.SUCCESS for t in complete) / len(complete))


def test_cli_table_counts_failed_episodes(chat_server, capsys):
    server = chat_server(user_reply, fail_rate=0.3, stall_share=0.0)
    env_kwargs = {"user": "llm", "user_backend": user_backend(server, max_retries=0), "max_agent_turns": 2}
    assert cli.main(["eval", "SEAD-Outbound-v0", "--episodes", "20", "--quiet", "--env-kwargs", json.dumps(env_kwargs)]) == 0
    table = next(block for block in capsys.readouterr().out.split("\n\n") if block.startswith("| agent"))
    header, _, row = table.splitlines()[:3]
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert 0 < int(cells["failed"]) < 20
