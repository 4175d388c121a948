"""``dialogue-gym export``: where a preference pair's prompt ends (worked out by hand on small chats),
the env kwargs column, and a parquet export into an empty folder that already exists."""

import json

import pytest

datasets = pytest.importorskip("datasets")

from dialogue_gym.evaluation import evaluate, load_trajectories  # noqa: E402
from dialogue_gym.integrations.datasets import _split_at_shared_start, build_rows, export  # noqa: E402


def chat(*pairs):
    return [{"role": role, "content": content} for role, content in pairs]


SYS, OPEN = ("system", "You are the agent."), ("user", "Hello?")


def test_the_prompt_ends_before_the_last_learner_message_both_chats_share():
    # they differ first at message 3 (what the learner heard): the prompt is cut back to before the
    # shared assistant message 2, so both sides continue with a learner message
    chosen = chat(SYS, OPEN, ("assistant", "Hi, how can I help?"), ("user", "My card is blocked."), ("assistant", "Let me look."))
    rejected = chat(SYS, OPEN, ("assistant", "Hi, how can I help?"), ("user", "Never mind."), ("assistant", "Goodbye."))
    assert _split_at_shared_start(chosen, rejected) == 2
    # they differ first at the learner's own message 2: the prompt is the two messages before it
    assert _split_at_shared_start(chat(SYS, OPEN, ("assistant", "A")), chat(SYS, OPEN, ("assistant", "B"))) == 2
    # one chat is the other's start: the prompt still leaves each side a learner message
    short = chat(SYS, OPEN, ("assistant", "Hi."))
    longer = chat(SYS, OPEN, ("assistant", "Hi."), ("user", "Hello again."), ("assistant", "Yes?"))
    assert _split_at_shared_start(short, longer) == _split_at_shared_start(longer, short) == 2
    # two learner messages shared before the first difference: the prompt keeps the first one
    chosen = chat(SYS, OPEN, ("assistant", "Hi."), ("user", "Card."), ("assistant", "Blocked?"), ("user", "Yes."), ("assistant", "Fixed."))
    rejected = chat(SYS, OPEN, ("assistant", "Hi."), ("user", "Card."), ("assistant", "Blocked?"), ("user", "No."), ("assistant", "Oh."))
    assert _split_at_shared_start(chosen, rejected) == 4
    # nothing shared that ends before a learner message on both sides: no prompt
    assert _split_at_shared_start(chat(("user", "a"), ("assistant", "b")), chat(("user", "c"), ("assistant", "d"))) == 0
    assert _split_at_shared_start(chat(SYS, ("user", "a"), ("assistant", "b")), chat(SYS, ("user", "c"), ("assistant", "b"))) == 0


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "run.jsonl"
    evaluate("SEAD-Outbound-v0", "sop", 2, seed=0, env_kwargs={"max_agent_turns": 4, "invalid_action_penalty": 0.2}, out=path)
    return path


def test_the_env_kwargs_column_is_the_same_whatever_order_they_are_given_in(small_run):
    trajectories = load_trajectories(small_run)
    one = build_rows(trajectories, "sft", {"max_agent_turns": 4, "invalid_action_penalty": 0.2})
    other = build_rows(trajectories, "sft", {"invalid_action_penalty": 0.2, "max_agent_turns": 4})
    assert [row["env_kwargs"] for row in one] == [row["env_kwargs"] for row in other] == ['{"invalid_action_penalty": 0.2, "max_agent_turns": 4}'] * 2
    assert json.loads(one[0]["env_kwargs"]) == {"max_agent_turns": 4, "invalid_action_penalty": 0.2}


def test_a_parquet_export_may_go_to_an_empty_folder_that_exists(small_run, tmp_path):
    (tmp_path / "out").mkdir()
    kwargs = {"max_agent_turns": 4, "invalid_action_penalty": 0.2}
    assert len(export(small_run, "sft", tmp_path / "out", env_kwargs=kwargs, parquet=True)) == 2
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "sft.parquet"), split="train")
    assert loaded["seed"] == [t.seed for t in load_trajectories(small_run)] and loaded["env_kwargs"] == ['{"invalid_action_penalty": 0.2, "max_agent_turns": 4}'] * 2


def test_the_chosen_side_is_the_chat_of_the_dialogue_with_the_higher_reward(tmp_path):
    path = tmp_path / "two.jsonl"
    for agent in ("sop", "adaptive"):
        evaluate("SEAD-Outbound-v0", agent, 6, seed=3, out=path, append=True)
    trajectories = load_trajectories(path)
    chats = {row["source_hash"]: row["messages"] for row in build_rows(trajectories, "sft")}
    rows = build_rows(trajectories, "preference")
    assert rows
    for row in rows:
        assert row["chosen_reward"] > row["rejected_reward"]
        assert row["prompt"] + row["chosen"] == chats[row["chosen_source_hash"]]
        assert row["prompt"] + row["rejected"] == chats[row["rejected_source_hash"]]


def test_a_dialogue_the_learner_never_moved_in_is_kept_by_rollouts_and_left_out_of_sft():
    """A run whose backend failed before the agent's first move: nothing to learn from (no sft row, no
    preference side) but still a record of the run (a rollouts row)."""
    from dialogue_gym.integrations.common import make_game

    game = make_game("SEAD-Outbound-v0")
    game.reset(seed=4, options=game.evaluation_options(0, 4))
    game.abort("backend down")
    failed = game.trajectory()
    failed.learner, failed.meta = "agent", {**failed.meta, "env_id": "SEAD-Outbound-v0", "failure": "backend down"}
    assert failed.turns == []
    assert build_rows([failed], "sft") == [] and build_rows([failed, failed], "preference") == []
    (row,) = build_rows([failed], "rollouts")
    assert row["turns"] == [] and row["outcome"] == "backend_failure" and row["messages"][0]["role"] == "system"


def test_a_parquet_export_makes_the_folders_it_needs(small_run, tmp_path):
    out = tmp_path / "exports" / "sead" / "sft"
    export(small_run, "sft", out, env_kwargs={"max_agent_turns": 4, "invalid_action_penalty": 0.2}, parquet=True)
    assert [path.name for path in out.iterdir()] == ["sft.parquet"]
