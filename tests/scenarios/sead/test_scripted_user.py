"""The scripted simulator must separate baselines, spread over states, resist surface tricks, and
react to what it understood (walkthrough, nonsense, echoes, repeats, saturation)."""

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as metrics
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.parsing import render_agent_output
from dialogue_gym.scenarios.sead.scripted_user import (
    COMPLETED,
    ScriptedUser,
    UserDynamics,
    _clamp,
    echoes,
)
from dialogue_gym.simulators.base import ScriptedPolicy

EPISODES = 1200


@pytest.fixture(scope="module")
def baseline_runs():
    return {name: evaluate("SEAD-Outbound-v0", name, EPISODES, seed=0) for name in ("random", "sop", "adaptive", "oracle")}


def test_baselines_are_separated(baseline_runs):
    """Measured at 1200 episodes (seed 0): random 0.002, sop 0.252, adaptive 0.602, oracle 0.677
    (the owner needs the walkthrough when ready, so the blind SOP script is weaker than under the
    keyword analyzer: 0.360 before)."""
    rates = {name: metrics.cr(runs) for name, runs in baseline_runs.items()}
    assert rates["random"] <= 0.05
    assert 0.2 <= rates["sop"] <= 0.35
    assert rates["adaptive"] - rates["sop"] >= 0.25
    assert rates["oracle"] >= 0.62
    intervals = {name: metrics.cr_interval(runs) for name, runs in baseline_runs.items()}
    order = ["random", "sop", "adaptive", "oracle"]
    for weaker, stronger in zip(order, order[1:]):
        assert intervals[weaker][1] < intervals[stronger][0], (weaker, stronger, rates)


def test_sop_spreads_over_initial_states(baseline_runs):
    per_state = metrics.per_state_cr(baseline_runs["sop"])
    assert not np.isnan(per_state).any()
    assert per_state.min() <= 0.05 and per_state.max() >= 0.95
    assert per_state[4].mean() > per_state[0].mean() + 0.3


class Stuffer(ScriptedPolicy):
    """Every cue word the analyzer knows, every turn."""

    LINE = (
        "Hello, this is Alex calling from FoodMap, sorry, I understand, I'm an AI assistant. Are you the owner? "
        "Free ad credit, more customers, 500,000 users, rating 4.6, no hidden fees, pay-per-click, switch it off anytime, "
        "valid until the end of the year, 700 units, in short, I'll be quick, open your back-office app, tap get more "
        "exposure, claim it, you should see an SMS."
    )

    def act(self, observation, info, memory):
        return render_agent_output(self.LINE)


class PoliteStuffer(Stuffer):
    LINE = "Hello, sorry, I understand. Free credit, 500,000 users, no hidden fees, switch it off anytime, open your app, tap, claim it."


@pytest.mark.parametrize("stuffer", [Stuffer(), PoliteStuffer()], ids=["every-cue", "short-stuffed"])
def test_cue_stuffing_does_worse_than_sop(baseline_runs, stuffer):
    stuffed = metrics.cr(evaluate("SEAD-Outbound-v0", stuffer, EPISODES, seed=0))
    assert stuffed < metrics.cr(baseline_runs["sop"])


class EmpathyFirstScript(ScriptedPolicy):
    """A different fixed script: soothe first, pitch later, walk through once."""

    LINES = (
        "Hello, this is Alex calling from FoodMap, sorry to bother you. Am I speaking with the owner of the restaurant?",
        "I understand you're busy, I appreciate your patience.",
        "Totally fair if you have questions, no worries.",
        "We'd like to give your restaurant 700 units of free ad credit to bring you more customers.",
        "Our app has more than 500,000 users; it's pay-per-click with no hidden fees, and you can switch it off anytime.",
        "Please open your merchant back-office app.",
        "Now tap the 'get more exposure' entry.",
        "Then claim the credit; you should see an SMS and a pop-up.",
    )

    def act(self, observation, info, memory):
        turn = int(observation["turn"])
        return render_agent_output(self.LINES[min(turn, len(self.LINES) - 1)])


def test_reading_the_owner_pays_for_every_kind_of_owner(baseline_runs):
    """Good play must read the owner: the reactive baseline beats the blind SOP script at every
    initial cooperation and every initial emotion (it used to be that no fixed script was best
    everywhere; with the walkthrough rule a blind script loses everywhere)."""
    sop = metrics.per_state_cr(baseline_runs["sop"])
    adaptive = metrics.per_state_cr(baseline_runs["adaptive"])
    for axis in ((1, 2), (0, 2)):
        assert (adaptive.mean(axis=axis) > sop.mean(axis=axis) + 0.05).all(), axis


def test_another_fixed_script_does_not_beat_the_sop_script(baseline_runs):
    """The audit bounds blind policies by the SOP script + 0.05; a different fixed script (soothe
    first, walk through once) stays below it (measured 0.149 vs 0.252)."""
    empathy = metrics.cr(evaluate("SEAD-Outbound-v0", EmpathyFirstScript(), EPISODES, seed=0))
    assert empathy < metrics.cr(baseline_runs["sop"])


def test_outcomes_follow_the_agents_choices(baseline_runs):
    """Same seeds and profiles, different agent: outcomes differ episode by episode, not only on average."""
    sop = [t.outcome for t in baseline_runs["sop"]]
    adaptive = [t.outcome for t in baseline_runs["adaptive"]]
    assert [t.profile for t in baseline_runs["sop"]] == [t.profile for t in baseline_runs["adaptive"]]
    assert sum(a != b for a, b in zip(sop, adaptive)) > EPISODES // 5


def test_scripted_user_is_seeded():
    first = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=7)
    again = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=7)
    other = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=8)
    assert [t.to_dict() for t in first] == [t.to_dict() for t in again]
    assert [t.to_dict() for t in first] != [t.to_dict() for t in other]


# -- the owner's dynamics on what it understood ---------------------------------------------------

OPENER = "Hello, this is Alex calling from FoodMap, sorry to bother you. Am I speaking with the owner of the restaurant?"
READY = {"state": [4, 3, 5], "behaviors": ["IC1"]}
STEPS_IN_ORDER = (
    "Please open your merchant back-office app.",
    "Now tap the 'get more exposure' entry.",
    "Then claim the credit; you should see an SMS and a pop-up.",
    "Press claim it, and an SMS with a pop-up will confirm.",
)


def play(lines, profile=READY, seeds=range(100)):
    """(outcome, owner replies) per seed for a fixed list of agent lines."""
    env = gym.make("SEAD-Outbound-v0")
    results = []
    for seed in seeds:
        env.reset(seed=seed, options={"profile": profile})
        replies, info = [], {}
        for line in lines:
            observation, _, terminated, _, info = env.step(line)
            replies.append(observation["messages"][-1]["content"])
            if terminated:
                break
        results.append((info.get("outcome"), replies))
    return results


def test_dynamics_constants_are_pinned():
    d = UserDynamics()
    assert (d.repeat_similarity, d.echo_share, d.echo_min_words, d.nonsense_limit) == (0.6, 0.8, 3, 3)
    assert d.saturation == (1.0, 0.5, 0.25)
    assert (d.step_success, d.steps_per_turn, d.act_probability) == ((0.95, 0.6), 2, (0.7, 0.9))
    assert (d.ignored_question, d.ignored_readiness, d.pushed, d.patience_rounds) == (0.5, 0.4, 0.2, 3)


def test_effects_saturate():
    user = ScriptedUser(load_behaviors())
    memory = user.start(READY, seed=0)
    assert [user._freshness(memory, "empathy") for _ in range(5)] == [1.0, 0.5, 0.25, 0.0, 0.0]
    assert user._freshness(memory, "evidence") == 1.0


def test_guide_keywords_do_not_complete_the_claim():
    """The old success rule (the guide keyword twice once cooperation was 3) is gone: a ready owner
    that hears cue words about tapping, SMS and claiming never completes."""
    lines = [OPENER, "Tap the SMS pop-up, you should see it.", "You should see the pop-up now, tap it.", "Claim it after the SMS and the pop-up arrive."]
    assert all(outcome != "success" for outcome, _ in play(lines))


def test_the_walkthrough_in_order_completes_and_out_of_order_does_not():
    in_order = play([OPENER, *STEPS_IN_ORDER])
    assert sum(outcome == "success" for outcome, _ in in_order) >= 60
    assert all(COMPLETED in replies[-1] for outcome, replies in in_order if outcome == "success")
    backwards = play([OPENER, STEPS_IN_ORDER[2], STEPS_IN_ORDER[1], STEPS_IN_ORDER[0]])
    assert all(outcome != "success" for outcome, _ in backwards)
    assert sum("haven't done the first part" in replies[1] for _, replies in backwards if len(replies) > 1) >= 80


def test_a_step_before_agreeing_is_refused():
    unready = {"state": [1, 3, 5], "behaviors": ["IC1"]}
    results = play([OPENER, STEPS_IN_ORDER[0]], profile=unready)
    refused = [replies for _, replies in results if len(replies) > 1]
    assert sum("haven't agreed" in replies[1] for replies in refused) >= 0.9 * len(refused)


def test_nonsense_ends_the_call():
    """Three turns that make no sense (made-up words, strung cues, silence) and the owner hangs up,
    even when it was ready (a turn it missed does not count)."""
    nonsense = ["kalovex drimun zorpel quotas tasrin", "owner open the app anytime 700", "", "free credit, no fees, rating, sms, exposure"]
    results = play([OPENER, *nonsense, *nonsense])
    assert all(outcome == "hangup" for outcome, _ in results)
    assert sum(len(replies) == 4 and "can't follow you" in replies[-1] for _, replies in results) >= 80


def test_echoing_the_owner_is_not_an_answer():
    question = "Are there any hidden fees I should know about?"
    assert echoes(question, question, 0.8, 3)
    assert not echoes("There are no hidden fees.", question, 0.8, 3)  # two content words: an answer
    assert not echoes("No, there are no hidden fees, and the credit is free of charge.", question, 0.8, 3)


def test_padding_a_repeat_with_a_made_up_word_is_still_a_repeat():
    line = "We are offering your restaurant free advertising credit on FoodMap, would you like it?"
    padded = line.replace("restaurant", "kalovex")
    results = play([OPENER, line, padded], profile={"state": [3, 3, 5], "behaviors": ["IC1"]})
    # (unless the owner missed the first saying, or misses the second)
    heard = [replies[2] for _, replies in results if len(replies) > 2 and "missed that" not in replies[1] + replies[2]]
    assert len(heard) >= 80 and all("You already said that." in reply for reply in heard)


def test_a_line_sharing_exactly_the_repeat_share_of_words_is_a_repeat():
    """"The free advertising credit helps you." shares 3 of the 5 content words it and "We offer free
    advertising credit." have between them: 0.6, the repeat_similarity, is a repeat; 3 of 7 is not."""
    first = "We offer free advertising credit."
    for line, repeat in (("The free advertising credit helps you.", True), ("The free advertising credit helps restaurants grow.", False)):
        results = play([OPENER, first, line], profile={"state": [3, 3, 5], "behaviors": ["IC1"]}, seeds=range(40))
        heard = [replies[2] for _, replies in results if len(replies) > 2 and "missed that" not in replies[1] + replies[2]]
        assert len(heard) >= 25 and all(("You already said that." in reply) is repeat for reply in heard), line


def test_the_state_is_clamped_into_its_ranges_dimension_by_dimension():
    """Cooperation 0-4, emotion 0-3, trust 0-5: each bound applies to its own dimension only."""
    assert _clamp(-1, 4, 6) == (0, 3, 5)
    assert _clamp(5, -2, -1) == (4, 0, 0)
    assert _clamp(0, 0, 0) == (0, 0, 0) and _clamp(4, 3, 5) == (4, 3, 5) and _clamp(2, 1, 3) == (2, 1, 3)
