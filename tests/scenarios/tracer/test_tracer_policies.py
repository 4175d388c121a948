import random
import re

import numpy as np
import pytest

from dialogue_gym.backends import CannedBackend
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer import dynamics
from dialogue_gym.scenarios.tracer.assistants import PhraseAssistant
from dialogue_gym.scenarios.tracer.data import load_phrases, load_replies
from dialogue_gym.scenarios.tracer.dynamics import (
    FeatureMap,
    IntentDynamics,
    draw_level,
    softmax,
)
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.judges import (
    DIMENSIONS,
    HeuristicJudge,
    LLMJudge,
    make_judge,
)
from dialogue_gym.scenarios.tracer.parsing import parse_user_output
from dialogue_gym.scenarios.tracer.policies import SCRIPTED, make_policy, policy_names

MERCHANT = {"name": "Shop", "industry": "automotive", "facts": ["down payments start from 15% on most models", "test drives can be booked any day"]}
PROFILE = {"user": {"personality": "skeptical", "need": "urgent", "initial_intent": "wants a car"}, "merchant": MERCHANT}


def play(assistant="sop", user="scripted", seed=0, session="syn-g00-s00"):
    game = TracerGame()
    driver = CounterpartDriver({"assistant": make_policy("assistant", assistant), "user": make_policy("user", user)}, learner=None)
    game.reset(seed=seed, options={"session_id": session})
    driver.advance([game], [driver.start(game)])
    return game


def test_feature_map_switches_on_the_named_features():
    feature_map = FeatureMap.from_world(__import__("dialogue_gym.scenarios.tracer.data", fromlist=["load_world"]).load_world())
    x = feature_map.features(PROFILE, ["Hello!", "Leave your phone number?", "Share your WeChat?"], 3, 3)
    on = {feature_map.names[i] for i in np.flatnonzero(x)}
    assert on == {
        "bias", "prev:3", "progress", "act:contact_request", "pushy",
        "personality:skeptical", "need:urgent", "industry:automotive",
    }
    assert x[feature_map.index("progress")] == pytest.approx(3 / 15)
    first = feature_map.features({"user": {"personality": "unknown"}, "merchant": {}}, ["Hi there"], None, 0)
    assert {feature_map.names[i] for i in np.flatnonzero(first)} == {"bias", "prev:start", "act:greeting"}


def numpy_draw(logits, rng):
    """draw_level as NumPy computes it, the reference its memoised CDFs must equal."""
    cumulative = np.cumsum(np.exp(logits - logits.max()))
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), 5))


def test_a_memoised_draw_is_the_numpy_draw():
    """Drawn twice (the second time from the memo), from ties (-inf logits), logits whose exponent
    overflows unless shifted by their maximum, float32 logits (not memoised, so two of them must not
    share an entry) and logits with NaN or +inf (a NaN CDF, whole or from a point on), every draw
    equals NumPy's on the same generator state."""
    generator = np.random.default_rng(0)
    cases = [generator.normal(0, scale, 6) for scale in (0.1, 1.0, 5.0, 30.0) for _ in range(25)]
    cases += [np.array([0.0, -np.inf, -np.inf, 0.0, -np.inf, 2.0]), np.array([1.0] * 6), np.array([400.0, 0, 0, 0, 0, 399.0])]
    cases += [np.array(values, dtype=np.float32) for values in ([0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [np.nan, 0, 0, 0, 0, 0])]
    cases += [np.array([np.nan, 0, 0, 0, 0, 0]), np.array([-np.inf] * 6), np.array([0.0, 0, np.inf, 0, 0, 0]), np.array([3.0, 1.0, 2.0])]
    with np.errstate(invalid="ignore"):  # the NaN, +inf and all -inf cases
        for index, logits in enumerate(cases):
            for seed in (index, index + 1000):
                for _ in range(2):
                    assert draw_level(logits, random.Random(seed)) == numpy_draw(logits, random.Random(seed)), logits
    assert draw_level(np.array([0.0, 0, 0, 0, 0, 0]), random.Random(0)) == int(random.Random(0).random() * 6)
    # only six-level vectors are memoised: a long one would pin its bytes in the memo
    kept = len(dynamics._CUMULATIVE)
    draw_level(np.zeros(10_000), random.Random(0))
    assert len(dynamics._CUMULATIVE) == kept


def plain_render_reply(level, profile, rng):
    """render_reply as written before its draws went through ``rng._randbelow``: the reference stream."""
    data = load_replies()
    by_industry = data["replies"][str(level)]
    industry = profile.get("merchant", {}).get("industry")
    options = by_industry.get(industry) or by_industry.get("any") or next(iter(by_industry.values()))
    reply = options[rng.randrange(len(options))]
    user = profile.get("user", {})
    need = str(user.get("initial_intent", "need this")).rstrip(".")
    fields = {
        "phone": f"1{rng.randint(30, 89)}xxxx{rng.randint(1000, 9999)}",
        "wechat": f"user{rng.randint(100, 999)}{rng.choice('abcdefgh')}",
        "need_short": need if len(need) < 60 else "have a concrete need",
        "merchant": profile.get("merchant", {}).get("name", "the merchant"),
    }
    reply = reply.format(**fields)
    if user.get("personality") == "impatient and direct" and reply.endswith((".", "?")) and rng.random() < 0.5:
        reply = reply[:-1]
    rationales = data["rationales"][str(level)]
    return reply, rationales[rng.randrange(len(rationales))].format(**fields)


def test_a_rendered_reply_draws_as_the_plain_randint_and_choice():
    """Every level, industry and persona, 40 replies in a row from one generator each: the same
    replies and rationales, and the generators end in the same state (no draw more or less)."""
    from dialogue_gym.scenarios.tracer.users import render_reply

    profiles = [PROFILE, {"user": {"personality": "impatient and direct", "initial_intent": "x" * 70}, "merchant": {"industry": "legal", "name": "Firm"}}, {"user": {}}]
    profiles += [{"user": {"personality": "impatient and direct"}, "merchant": {"industry": industry}} for industry in ("healthcare", "education", "unknown")]
    for seed, profile in enumerate(profiles):
        fast, plain = random.Random(seed), random.Random(seed)
        for turn in range(40):
            level = turn % 6
            assert render_reply(level, profile, fast) == plain_render_reply(level, profile, plain)
        assert fast.getstate() == plain.getstate()


def test_dynamics_probabilities_and_seeded_draws():
    dynamics = IntentDynamics.from_file()
    x = dynamics.feature_map.features(PROFILE, ["Hello"], None, 0)
    p = dynamics.probabilities(x)
    assert p.shape == (6,) and p.sum() == pytest.approx(1.0) and p[0] < 0.05 and p[5] < 0.05
    assert dynamics.probabilities(np.stack([x, x])).shape == (2, 6)
    draws = [dynamics.sample(x, random.Random(seed)) for seed in range(2000)]
    assert np.allclose(np.bincount(draws, minlength=6) / 2000, p, atol=0.04)
    assert draw_level(np.array([0.0, 0, 0, 0, 0, 50.0]), random.Random(1)) == 5
    assert np.allclose(softmax(np.zeros(6)), 1 / 6)
    with pytest.raises(ConfigError, match=r"weights must have shape \(\d+, 6\)"):
        IntentDynamics(dynamics.feature_map, np.zeros((3, 6)))


def test_scripted_user_is_seeded_and_emits_the_tracer_format():
    first, second = play(seed=3), play(seed=3)
    assert [t.raw for t in first.turns] == [t.raw for t in second.turns]
    assert [t.raw for t in play(seed=4).turns] != [t.raw for t in first.turns]
    for turn in first.trajectory().turns_of("user"):
        assert parse_user_output(turn.raw, 2).format_ok and turn.invalid is None


@pytest.mark.parametrize(
    "name, intents, outcome",
    [("eager", [3, 4, 5], "success"), ("reluctant", [2, 1, 0], "hangup"), ("flat", [3] * 15, "timeout")],
)
def test_baseline_users(name, intents, outcome):
    game = play(user=name)
    assert game.intents == intents and game.outcome.value == outcome


def test_random_user_covers_the_levels():
    levels = {level for seed in range(30) for level in play(user="random", seed=seed).intents}
    assert levels == set(range(6))


@pytest.mark.parametrize("name", sorted(SCRIPTED["assistant"]))
def test_assistants_speak_plain_text_from_the_merchant_facts(name):
    game = play(assistant=name, seed=1)
    spoken = [t for t in game.trajectory().turns_of("assistant")]
    assert spoken and all(t.invalid is None and t.text for t in spoken)


def test_assistant_strategies():
    pushy = play(assistant="pushy").trajectory().turns_of("assistant")
    assert all("hurry" in t.text.lower() or "don't miss" in t.text.lower() for t in pushy)
    empathetic = play(assistant="empathetic", user="flat").trajectory().turns_of("assistant")
    assert not any("phone" in t.text.lower() or "contact" in t.text.lower() for t in empathetic)


def test_make_policy_errors():
    assert policy_names("user") == ["scripted", "random", "flat", "eager", "reluctant", "llm"]
    with pytest.raises(ConfigError, match=r"user='genius' is not a known user policy; use one of \['scripted'"):
        make_policy("user", "genius")
    with pytest.raises(ConfigError, match="user='llm' needs user_backend=..."):
        make_policy("user", "llm")


def test_heuristic_judge_by_hand():
    judge = HeuristicJudge()
    good = [
        ("user", "What is the down payment?"),
        ("assistant", "Down payments start from 15% on most models."),
        ("user", "Too expensive."),
        ("assistant", "I understand, no pressure. Test drives can be booked any day."),
    ]
    scores = judge.score(good, MERCHANT)
    assert scores == {"accuracy": 5.0, "helpfulness": 5.0, "informativeness": 5.0, "empathy": 5.0, "rq": 5.0}
    bad = [
        ("user", "What is the down payment?"),
        ("assistant", "Leave your number, only 3 cars left, ends today!"),
        ("user", "Too expensive."),
        ("assistant", "You must decide now, we guarantee the cheapest price."),
    ]
    scores = judge.score(bad, MERCHANT)
    assert scores["accuracy"] == 1.0 and scores["helpfulness"] == 1.0 and scores["informativeness"] == 1.0
    assert scores["empathy"] == 1.0 and scores["rq"] == 1.0
    assert judge.score([("user", "Bye")], MERCHANT) == {name: None for name in (*DIMENSIONS, "rq")}


def test_llm_judge_parses_the_rubric_json_in_one_batch():
    backend = CannedBackend(['{"accuracy": 4, "helpfulness": 5, "informativeness": 3, "empathy": 4}', "I think it was fine."])
    judge = make_judge("llm", backend)
    first, second = judge.score_batch([([("user", "hi"), ("assistant", "hello")], MERCHANT)] * 2)
    health = first.pop("health")
    assert first == {"accuracy": 4.0, "helpfulness": 5.0, "informativeness": 3.0, "empathy": 4.0, "rq": 4.0}
    assert health == {"judge": {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}}
    assert second["rq"] is None and "not the rubric's JSON" in second["error"] and not second["health"]["judge"]["format_ok"]
    assert isinstance(make_judge("heuristic"), HeuristicJudge) and make_judge("none") is None
    assert isinstance(judge, LLMJudge)
    with pytest.raises(ConfigError, match="judge='llm' needs judge_backend"):
        make_judge("llm")


def test_the_assistants_negative_reply_check_is_the_plain_search():
    """PhraseAssistant.negative reads through the judge's memo: equal to searching the cues afresh, on
    every reply template (each level and industry, slots filled) and on free text, twice (memo hit)."""
    cues = load_phrases()["negative_cues"]
    fields = {"phone": "13xxxx1234", "wechat": "user123a", "need_short": "a car", "merchant": "Shop"}
    replies = [t.format(**fields) for by_industry in load_replies()["replies"].values() for lines in by_industry.values() for t in lines]
    # "^hmm" is anchored (the reply is stripped first); a long reply is searched whole, past the memo's bound
    replies += ["", "  No thanks.  ", "NO THANKS", "   hmm, let me think", "I'm not sure", "Sounds great!", "x " * 3000 + "too expensive"]
    found = [bool(re.search(cues, reply.strip(), re.IGNORECASE)) for reply in replies]
    assert any(found) and not all(found)
    for _ in range(2):
        assert [PhraseAssistant.negative(reply) for reply in replies] == found
