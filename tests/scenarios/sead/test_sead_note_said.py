"""AdaptiveAgent.note_said: the memory of what the agent said follows what was said in its seat."""

import copy

import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.agents import PHRASES, AdaptiveAgent, said_phrases
from dialogue_gym.scenarios.sead.parsing import parse_agent_output, render_agent_output

OPEN, GUIDE, AGAIN = PHRASES["opening"][0], PHRASES["guide"], PHRASES["guide_again"]


def labels_of(owner: list[str], said: list[str], follow: bool = True) -> list[str]:
    """Adaptive's label (utterance) at each agent turn of a hand-built chat: the owner's lines ``owner``
    (the first is the pick-up), the agent's seat saying ``said``; with ``follow`` it is told what was said."""
    agent, messages, labels = AdaptiveAgent(), [], []
    memory = agent.start({}, 0)
    for turn, (heard, text) in enumerate(zip(owner, said)):
        messages.append({"role": "user", "content": heard})
        labels.append(parse_agent_output(agent.act({"turn": turn, "messages": list(messages)}, {}, memory)).utterance)
        if follow:
            agent.note_said(memory, render_agent_output(text, (2, 2, 2)))
        messages.append({"role": "assistant", "content": render_agent_output(text, (2, 2, 2))})
    return labels


def test_no_phrase_contains_another_so_the_phrases_said_are_read_one_for_one():
    phrases = [phrase for options in PHRASES.values() for phrase in options]
    assert not [(a, b) for a in phrases for b in phrases if a != b and a in b]
    text = f"Well. {GUIDE[1]} and {PHRASES['empathy'][0]} {GUIDE[1]}"
    assert said_phrases(text) == [("guide", GUIDE[1]), ("empathy", PHRASES["empathy"][0]), ("guide", GUIDE[1])]
    assert said_phrases("The weather is nice today.") == []


class Twice(AdaptiveAgent):
    """Plays adaptive and keeps a second memory told its own label each turn; checks both agree."""

    def start(self, profile, seed):
        return {"plain": super().start(profile, seed), "noted": super().start(profile, seed)}

    def act(self, observation, info, memory):
        label = super().act(observation, info, memory["plain"])
        assert super().act(observation, info, memory["noted"]) == label
        # The same words with other scores are its own line too.
        self.note_said(memory["noted"], label.replace("<cooperation_score>", "<cooperation_score>9") if "<cooperation_score>" in label else label)
        assert memory["noted"] == memory["plain"]
        return label


def test_told_its_own_lines_the_memory_is_what_acting_alone_leaves_over_many_dialogues():
    ours = evaluate("SEAD-Outbound-v0", Twice(), 60, seed=11)
    theirs = evaluate("SEAD-Outbound-v0", "adaptive", 60, seed=11)
    assert [[t.raw for t in a.turns] for a in ours] == [[t.raw for t in b.turns] for b in theirs]
    assert sum(len(a.turns) for a in ours) > 600  # long enough to reach the walkthrough and the fallbacks


def test_a_skipped_step_is_still_to_give_in_its_first_wording():
    owner = ['"Hello?"', "Alright, so what do I need to do?", "Okay, what's next?"]
    said = [OPEN, GUIDE[1], GUIDE[0]]  # the seat skips to step 2 where the label was step 1
    assert labels_of(owner, said, follow=False) == [OPEN, GUIDE[0], AGAIN[0]]  # believes it gave step 1
    assert labels_of(owner, said) == [OPEN, GUIDE[0], GUIDE[0]]  # step 1 is not in the chat: give it


def test_a_repeated_step_leaves_the_next_step_to_give():
    owner = ['"Hello?"', "Alright, so what do I need to do?", "Okay, the app is open. What's next?", "You already said that. What's next?"]
    said = [OPEN, GUIDE[0], GUIDE[0], GUIDE[1]]  # the seat repeats step 1 where the label was step 2
    assert labels_of(owner, said, follow=False) == [OPEN, GUIDE[0], GUIDE[1], AGAIN[1]]  # rephrases a step never said
    assert labels_of(owner, said) == [OPEN, GUIDE[0], GUIDE[1], GUIDE[1]]


def test_a_step_said_in_its_second_wording_is_given_in_the_first_next():
    owner = ['"Hello?"', "Alright, so what do I need to do?", "What's next?", "What's next?"]
    said = [OPEN, AGAIN[0], GUIDE[0], GUIDE[0]]
    assert labels_of(owner, said) == [OPEN, GUIDE[0], GUIDE[0], AGAIN[0]]


def test_a_step_said_a_third_time_out_of_turn_is_given_in_the_other_wording_next():
    owner = ['"Hello?"', "Alright, so what do I need to do?", "What's next?", "Is this a scam?", "What's next?"]
    said = [OPEN, GUIDE[0], AGAIN[0], GUIDE[0], "x"]  # step 1 in both wordings, then again in the first
    assert labels_of(owner, said, follow=False)[3:] == [PHRASES["evidence"][0], GUIDE[0]]  # the seat's last line again
    assert labels_of(owner, said)[3:] == [PHRASES["evidence"][0], AGAIN[0]]


def test_a_phrasing_the_seat_used_is_not_the_next_label():
    owner = ['"Hello?"', "Is this a scam?", "Hmm, I'm not sure I believe that."]
    said = [OPEN, PHRASES["evidence"][1], PHRASES["evidence"][0]]
    assert labels_of(owner, said, follow=False)[2] == PHRASES["evidence"][1]  # what the chat already holds
    assert labels_of(owner, said) == [OPEN, PHRASES["evidence"][0], PHRASES["evidence"][0]]


def test_a_phrasing_the_label_chose_but_the_seat_did_not_say_is_still_fresh():
    owner = ['"Hello?"', "How much does it cost?", "Any fees?", "What does it cost me?"]
    said = [OPEN, PHRASES["cost"][0], PHRASES["evidence"][0], "x"]
    assert labels_of(owner, said, follow=False)[1:] == [PHRASES["cost"][0], PHRASES["cost"][1], PHRASES["cost"][0]]  # says cost 0 again
    assert labels_of(owner, said)[1:] == [PHRASES["cost"][0], PHRASES["cost"][1], PHRASES["cost"][1]]


def test_an_act_said_out_of_turn_counts_as_given_and_the_one_skipped_is_still_to_give():
    owner = ['"Hello?"', "Okay.", "Hmm.", "Right.", "Okay."]
    said = [OPEN, PHRASES["cost"][0], "x", "x", "x"]
    # on its own: value, evidence, cost, ask_readiness (_pick's wording by turn)
    assert labels_of(owner, said, follow=False)[1:] == [PHRASES["value"][1], PHRASES["evidence"][2], PHRASES["cost"][1], PHRASES["ask_readiness"][0]]
    said = [OPEN, PHRASES["cost"][0], PHRASES["value"][2], PHRASES["evidence"][3], "x"]
    assert labels_of(owner, said)[1:] == [PHRASES["value"][1], PHRASES["value"][2], PHRASES["evidence"][3], PHRASES["ask_readiness"][0]]


def test_text_it_does_not_know_counts_as_nothing_said():
    owner = ['"Hello?"', "Alright, so what do I need to do?", "What's next?"]
    said = [OPEN, "The weather is nice today.", GUIDE[0]]
    assert labels_of(owner, said, follow=False)[2] == AGAIN[0]
    assert labels_of(owner, said)[2] == GUIDE[0]


def test_note_said_before_any_turn_is_refused_with_the_fix():
    agent = AdaptiveAgent()
    with pytest.raises(ScenarioError, match="call act on the observation first"):
        agent.note_said(agent.start({}, 0), OPEN)


def test_note_said_undoes_only_the_turn_it_replaces():
    agent, memory = AdaptiveAgent(), AdaptiveAgent().start({}, 0)
    messages = [{"role": "user", "content": '"Hello?"'}]
    agent.act({"turn": 0, "messages": messages}, {}, memory)
    messages += [{"role": "assistant", "content": OPEN}, {"role": "user", "content": "Is this a scam? How much does it cost?"}]
    agent.act({"turn": 1, "messages": messages}, {}, memory)
    before = copy.deepcopy(memory)
    assert before["used"] == {PHRASES["evidence"][0]: 1, PHRASES["cost"][0]: 1} and before["progress"] == ["evidence", "cost"]
    agent.note_said(memory, PHRASES["cost"][1])
    assert memory["used"] == {PHRASES["cost"][1]: 1} and memory["progress"] == ["cost"] and memory["step_tries"] == [0, 0, 0]
    assert memory["estimate"] == before["estimate"]  # what it heard stays
