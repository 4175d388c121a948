"""DAgger for the ``sft`` phase (Ross et al. 2011): the language model plays, the scripted expert labels
the states it reaches, the labelled states join the expert's own dialogues and the model is trained again.

The expert sits in the learner's seat all along (:class:`ExpertLabels`): it is asked at every learner
turn and hears every counterpart line, but what is said is the model's turn. Its answer is the label of
that state. An expert that keeps a memory of what it said (SEAD's ``adaptive``: the phrasings used, the
acts and walkthrough steps given) is then told what the model said there (``note_said(memory, text)``,
where it has one), so its memory, and its next label, follow the chat the model sees: without it the
expert would believe it said its own labels, and after the model repeats or skips a line its labels could
repeat what the chat already holds or skip what it lacks. An expert without ``note_said`` keeps the
memory of its own labels.
"""

from __future__ import annotations

from typing import Any, Sequence


class ExpertLabels:
    """A learner's seat where ``learner`` plays and ``expert`` labels every state it reaches.

    ``sessions`` holds, per episode started, its rows in TRL's conversational prompt-completion form
    (the history as the learner saw it, the expert's turn as the completion) with ``said``: the
    learner's own turn at that state."""

    def __init__(self, learner: Any, expert: Any):
        self.learner, self.expert = learner, expert
        self.sessions: list[list[dict[str, Any]]] = []

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        self.sessions.append(rows)
        return {"learner": self.learner.start(profile, seed), "expert": self.expert.start(profile, seed), "rows": rows}

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[dict[str, Any]]) -> list[str]:
        labels = self.expert.act_batch(observations, infos, [memory["expert"] for memory in memories])
        said = self.learner.act_batch(observations, infos, [memory["learner"] for memory in memories])
        note_said = getattr(self.expert, "note_said", None)
        for observation, label, text, memory in zip(observations, labels, said, memories):
            if note_said is not None:
                note_said(memory["expert"], text)
            memory["rows"].append(
                {"prompt": [dict(m) for m in observation["messages"]], "completion": [{"role": "assistant", "content": label}], "said": text}
            )
        return said


def label_agreement(sessions: Sequence[Sequence[dict[str, Any]]]) -> float:
    """The share of the learner's turns that were the expert's label at the same state (on-policy agreement)."""
    rows = [row for session in sessions for row in session]
    return sum(row["said"] == row["completion"][0]["content"] for row in rows) / max(1, len(rows))


def weighted_mix(expert: Sequence[Sequence[dict[str, Any]]], labelled: Sequence[Sequence[dict[str, Any]]], share: float) -> tuple[list[Sequence[dict[str, Any]]], int]:
    """The sessions a DAgger round trains on: the ``expert``'s and the ``labelled`` ones, the labelled
    repeated so that their rows (learner turns) are about ``share`` of the mix's rows; ``share`` 0 takes
    each once (the plain aggregate). Returns the sessions and how many times each labelled one is in them.

    A round's labelled states are few beside the expert's dialogues (200 played starts: a tenth of the
    rows), so at a low rate their loss barely moves the model; repeating them weights the states the
    model reaches by itself without dropping the expert's, whose states it still has to keep."""
    labelled_rows, expert_rows = sum(map(len, labelled)), sum(map(len, expert))
    # labelled_rows * repeats / (expert_rows + labelled_rows * repeats) = share, solved for repeats; at
    # least once, so share 0 (or a share below half a session's weight) is the plain aggregate
    repeats = max(1, round(share / (1 - share) * expert_rows / labelled_rows)) if labelled_rows else 1
    return [*expert, *(session for _ in range(repeats) for session in labelled)], repeats
