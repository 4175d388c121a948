"""verl agent loops (the pure part, no verl): slots of an episode pool, the seed of a dialogue started from
a curriculum profile, and the token budget each generation is asked for."""

import asyncio

import pytest

pytest.importorskip("transformers")

from test_verl import SHORT, FakeRolloutServer, play_rows  # noqa: E402

from dialogue_gym.integrations.verl import CurriculumStarts, EpisodePool, dataset_rows, play_dialogue  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def test_dialogues_take_the_lowest_free_slot_and_slot_0_is_the_template_game():
    pool = EpisodePool("RLADA-Banking-v0", None, {})
    assert [pool.acquire(), pool.acquire()] == [0, 1]
    pool.release(0)
    assert pool.acquire() == 0 and pool.acquire() == 2
    pool = EpisodePool("RLADA-Banking-v0", None, {})
    pool.episodes.start(pool.acquire(), 0, 0)
    assert len(pool.episodes.games) == 1  # the first dialogue plays in the game LearnerEpisodes built


def test_a_dialogue_from_a_curriculum_profile_is_seeded_seed_plus_episode(tokenizer):
    profile = CurriculumStarts(batch_size=1, seed=0).profile("g")
    server = FakeRolloutServer(tokenizer, "SEAD-Outbound-v0", "agent")
    out = asyncio.run(play_dialogue(server, tokenizer, "SEAD-Outbound-v0", episode=3, seed=11, env_kwargs=SHORT["SEAD-Outbound-v0"],
                                    response_length=2048, request_id="p", profile=profile))
    assert out.trajectory.seed == 14 and out.trajectory.profile == profile


def test_each_generation_asks_for_no_more_than_the_room_left_the_turn_cap_and_the_callers_max_tokens(tokenizer):
    rows = dataset_rows("RLADA-Banking-v0", 1, seed=3, env_kwargs=SHORT["RLADA-Banking-v0"])
    # 250 tokens, 100 a turn: the last turn gets only what the earlier turns and replies left (under 100)
    (out,), server = play_rows(tokenizer, "RLADA-Banking-v0", "agent", rows, response_length=250, max_turn_tokens=100)
    rooms = [250 - (len(prompt_ids) - len(out.prompt_ids)) for _, prompt_ids, _, _ in server.calls]
    assert len(rooms) >= 2 and rooms[0] == 250 and rooms[-1] < 100
    assert [params["max_tokens"] for _, _, params, _ in server.calls] == [min(room, 100) for room in rooms]
    # the caller's own max_tokens, below both, is kept
    server = FakeRolloutServer(tokenizer, "RLADA-Banking-v0", "agent")
    asyncio.run(play_dialogue(server, tokenizer, "RLADA-Banking-v0", episode=0, seed=3, env_kwargs=SHORT["RLADA-Banking-v0"],
                              sampling_params={"max_tokens": 7}, response_length=4096, max_turn_tokens=30, request_id="m"))
    assert len(server.calls) >= 2 and all(params["max_tokens"] == 7 for _, _, params, _ in server.calls)


def test_the_callers_max_tokens_is_cut_to_the_room_left_and_a_last_token_of_room_is_still_generated(tokenizer):
    rows = dataset_rows("RLADA-Banking-v0", 1, seed=3, env_kwargs=SHORT["RLADA-Banking-v0"])

    def calls(response_length, max_turn_tokens, sampling_params):
        server = FakeRolloutServer(tokenizer, "RLADA-Banking-v0", "agent")
        out = asyncio.run(play_dialogue(server, tokenizer, "RLADA-Banking-v0", episode=0, seed=3, env_kwargs=SHORT["RLADA-Banking-v0"],
                                        sampling_params=sampling_params, response_length=response_length, max_turn_tokens=max_turn_tokens,
                                        request_id="c", raw_prompt=rows[0]["prompt"]))
        rooms = [response_length - (len(prompt_ids) - len(out.prompt_ids)) for _, prompt_ids, _, _ in server.calls]
        return rooms, [params["max_tokens"] for _, _, params, _ in server.calls], out

    # the caller asks for 100 a turn; the last turn of a 250-token response has less room than that
    for max_turn_tokens in (None, 100, 120):
        rooms, asked, _ = calls(250, max_turn_tokens, {"max_tokens": 100})
        assert rooms[-1] < 100 and asked == [min(room, 100) for room in rooms]
    # 300 tokens at 30 a turn leave exactly one token for the last turn: it is generated, not skipped
    rooms, asked, out = calls(300, 30, {})
    assert rooms[-1] == 1 and asked[-1] == 1 and out.response_mask[-1] == 1 and len(out.response_ids) == 300
