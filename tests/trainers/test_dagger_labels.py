"""ExpertLabels tells an expert that follows the chat (``note_said``) what the learner said."""

from dialogue_gym.scenarios.sead.agents import PHRASES
from dialogue_gym.scenarios.sead.parsing import parse_agent_output, render_agent_output
from dialogue_gym.scenarios.sead.policies import make_policy
from trainers.common.dagger import ExpertLabels

GUIDE, AGAIN = PHRASES["guide"], PHRASES["guide_again"]


class Lines:
    """A learner that says its lines in order (no note_said)."""

    def __init__(self, lines):
        self.lines = lines

    def start(self, profile, seed):
        return {"turn": 0}

    def act_batch(self, observations, infos, memories):
        texts = []
        for memory in memories:
            texts.append(render_agent_output(self.lines[memory["turn"]], (2, 2, 2)))
            memory["turn"] += 1
        return texts


def labels(expert, owner, said):
    seat = ExpertLabels(Lines(said), expert)
    memory, messages = seat.start({}, 0), []
    for turn, heard in enumerate(owner):
        messages.append({"role": "user", "content": heard})
        [text] = seat.act_batch([{"turn": turn, "messages": list(messages)}], [{}], [memory])
        messages.append({"role": "assistant", "content": text})
    assert [row["said"] for row in seat.sessions[0]] == [render_agent_output(line, (2, 2, 2)) for line in said]
    return [parse_agent_output(row["completion"][0]["content"]).utterance for row in seat.sessions[0]]


OWNER = ['"Hello?"', "Alright, so what do I need to do?", "Okay, the app is open. What's next?", "You already said that. What's next?"]
SAID = [PHRASES["opening"][0], GUIDE[0], GUIDE[0], GUIDE[1]]  # the learner repeats step 1 where the label was step 2


def test_the_label_after_a_repeated_step_is_the_step_the_chat_lacks():
    assert labels(make_policy("agent", "adaptive", None), OWNER, SAID) == [PHRASES["opening"][0], GUIDE[0], GUIDE[1], GUIDE[1]]


def test_an_expert_without_note_said_keeps_the_memory_of_its_own_labels():
    adaptive = make_policy("agent", "adaptive", None)
    expert = Lines([])  # only its start and act_batch: adaptive's, without note_said
    expert.start, expert.act_batch = adaptive.start, adaptive.act_batch
    assert labels(expert, OWNER, SAID) == [PHRASES["opening"][0], GUIDE[0], GUIDE[1], AGAIN[1]]
