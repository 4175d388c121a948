"""DAgger labels from what was said (issue 41): a DAgger round's labelled states relabelled by SEAD's
``adaptive`` expert two ways, and how often the two differ and repeat the chat.

    python benchmarks/sead_dagger_labels.py RUN/sft/dagger_0.jsonl --out labels.json

Each state is relabelled by replaying its chat (no model, no game): for every agent turn the expert acts
on the history, then, in the ``followed`` replay only, is told what the learner said there
(``AdaptiveAgent.note_said``). The ``own`` replay keeps the memory of its own labels (the expert before
``note_said``) and must give the saved labels back, which checks the replay. Reported: the share of
states whose label utterance changes; the share of labels (own, followed, and the learner's turns) that
repeat a sentence the agent said earlier in that chat (all states, and those after the learner's first
departure from the label, where the two can differ); and, for decision-point GRPO, the share of points
where a scripted continuation's first line after the LM's turn changes (every state after the first,
as cut from these dialogues with the LM as prefix; and the states right after a dialogue's first
deviation from the label, which is an expert-prefix point whose LM turn differs from the expert's).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from dialogue_gym.scenarios.sead.agents import AdaptiveAgent
from dialogue_gym.scenarios.sead.parsing import parse_agent_output

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of an agent turn's utterance (split after ``.``, ``!`` or ``?``)."""
    return [s for s in SENTENCE_END.split(parse_agent_output(text).utterance.strip()) if s]


def repeats(text: str, prompt: list[dict[str, Any]]) -> bool:
    """Whether ``text`` says a sentence the agent (assistant) said earlier in ``prompt``."""
    earlier = {s for message in prompt if message["role"] == "assistant" for s in sentences(message["content"])}
    return any(s in earlier for s in sentences(text))


def relabel(session: list[dict[str, Any]], follow: bool) -> list[str]:
    """The expert's label at each state of ``session`` (rows in order), its memory following what the
    learner said (``follow``) or its own labels."""
    expert = AdaptiveAgent()
    memory = expert.start({}, 0)
    labels = []
    for row in session:
        observation = {"turn": sum(m["role"] == "assistant" for m in row["prompt"]), "messages": row["prompt"]}
        labels.append(expert.act(observation, {}, memory))
        if follow:
            expert.note_said(memory, row["said"])
    return labels


def share(count: int, total: int) -> float:
    return round(count / max(1, total), 4)


def measure(sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    rows = changed = later = later_changed = own_repeat = new_repeat = said_repeat = 0
    deviation_points = deviation_changed = 0
    after = after_changed = after_own_repeat = after_new_repeat = 0
    for session in sessions:
        own, followed = relabel(session, False), relabel(session, True)
        saved = [row["completion"][0]["content"] for row in session]
        if own != saved:
            raise SystemExit("the own-memory replay does not give the saved labels back: the rows are not adaptive's labels of these chats")
        first_deviation = next((i for i, row in enumerate(session) if row["said"] != saved[i]), None)
        for index, (row, old, new) in enumerate(zip(session, own, followed)):
            differs = parse_agent_output(old).utterance != parse_agent_output(new).utterance
            rows += 1
            changed += differs
            own_repeat += repeats(old, row["prompt"])
            new_repeat += repeats(new, row["prompt"])
            said_repeat += repeats(row["said"], row["prompt"])
            if index:
                later += 1
                later_changed += differs
            if first_deviation is not None and index > first_deviation:
                # only here can the two memories differ: before it the learner said every label
                after += 1
                after_changed += differs
                after_own_repeat += repeats(old, row["prompt"])
                after_new_repeat += repeats(new, row["prompt"])
            if first_deviation is not None and index == first_deviation + 1:
                deviation_points += 1
                deviation_changed += differs
    return {
        "sessions": len(sessions), "states": rows,
        "label_changed": share(changed, rows),
        "own_label_repeats": share(own_repeat, rows), "followed_label_repeats": share(new_repeat, rows), "said_repeats": share(said_repeat, rows),
        "after_first_deviation": {"states": after, "label_changed": share(after_changed, after),
                                  "own_label_repeats": share(after_own_repeat, after), "followed_label_repeats": share(after_new_repeat, after)},
        "continuation_first_line_changed": {"lm_prefix_points": later, "share": share(later_changed, later),
                                            "expert_prefix_points": deviation_points, "expert_prefix_share": share(deviation_changed, deviation_points)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("rows", type=Path, help="a DAgger round's labelled states (RUN/sft/dagger_<r>.jsonl: one session a line)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    sessions = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    result = {"rows": str(args.rows), **measure(sessions)}
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
