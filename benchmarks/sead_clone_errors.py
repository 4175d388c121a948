"""Where a SEAD clone says something other than its teacher (issue 41, item 1: why agreement stops short).

    python benchmarks/sead_clone_errors.py --base RUN --checkpoint MODEL [MODEL ...] [--eval-episodes 240]

``RUN`` is a finished ``cpu-lm-scratch`` run folder (``benchmarks/sead_clone_factors.py``'s ``--base``):
its held-out starts give the teacher's (``adaptive``'s) dialogues. At every teacher turn each model
continues the teacher's history greedily (what teacher-forced agreement scores, decoded to the end of
the turn), and the turn it says is put in one class, by the known phrases (``PHRASES``) of what is said:

* ``agree``: the teacher's turn exactly;
* ``estimate``: the teacher's words, other state scores;
* ``phrasing``: the teacher's acts in the same order, some in another wording;
* ``acts``: other acts (some known phrase differs in its act);
* ``text``: words that are not the teacher's phrases (a broken or unknown sentence, no turn end).

``phrasing`` and ``acts`` are split by whether the model's turn holds a phrase the agent already said
earlier in that chat (``repeat``), which is what makes SEAD's owner say "You already said that".
Also printed: the same count on the teacher's own turns (how often the teacher repeats itself).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.scenarios.sead.agents import said_phrases
from dialogue_gym.scenarios.sead.parsing import parse_agent_output

CLASSES = ("agree", "estimate", "phrasing (new)", "phrasing (repeat)", "acts (new)", "acts (repeat)", "text")


def classify(teacher_turn: str, model_turn: str, said_before: Sequence[str]) -> str:
    """The class of ``model_turn`` against ``teacher_turn`` (raw agent turns) after the agent's earlier
    utterances ``said_before`` in that chat (see the module docstring)."""
    if model_turn == teacher_turn:
        return "agree"
    teacher, model = parse_agent_output(teacher_turn), parse_agent_output(model_turn)
    if model.problem is None and model.utterance == teacher.utterance:
        return "estimate"
    teacher_phrases, model_phrases = said_phrases(teacher.utterance), said_phrases(model.utterance)
    if model.problem is not None or not model_phrases or " ".join(phrase for _, phrase in model_phrases) != model.utterance:
        return "text"
    repeat = "repeat" if any(phrase in earlier for _, phrase in model_phrases for earlier in said_before) else "new"
    same_acts = [act for act, _ in model_phrases] == [act for act, _ in teacher_phrases]
    return f"{'phrasing' if same_acts else 'acts'} ({repeat})"


def teacher_repeats(chat: Sequence[dict[str, str]]) -> tuple[int, int]:
    """``(turns, turns holding a phrase the agent said earlier)`` over the assistant turns of ``chat``."""
    said: list[str] = []
    turns = repeats = 0
    for message in chat:
        if message["role"] != "assistant":
            continue
        utterance = parse_agent_output(message["content"]).utterance
        turns += 1
        repeats += any(phrase in earlier for _, phrase in said_phrases(utterance) for earlier in said)
        said.append(utterance)
    return turns, repeats


def greedy_turns(model: Any, tokenizer: Any, chat: Sequence[dict[str, str]], max_new_tokens: int) -> list[str]:
    """What ``model`` says greedily at each assistant turn of ``chat``, the history being the chat's."""
    import torch

    from trainers.common.sft import turn_spans

    ids, spans = turn_spans(tokenizer, chat)
    said = []
    for start, _ in spans:
        with torch.no_grad():
            out = model.generate(
                input_ids=torch.tensor([ids[:start]]), max_new_tokens=max_new_tokens, do_sample=False,
                eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
            )
        said.append(tokenizer.decode(out[0, start:], skip_special_tokens=True))
    return said


def errors_of(model: Any, tokenizer: Any, chats: Sequence[Sequence[dict[str, str]]], max_new_tokens: int) -> dict[str, Any]:
    """Counts of each class over every teacher turn of ``chats``, in all and by 0-based turn (turns 8+ pooled)."""
    counts: Counter[str] = Counter()
    by_turn: dict[int, Counter[str]] = {}
    for chat in chats:
        teacher = [message["content"] for message in chat if message["role"] == "assistant"]
        said_before: list[str] = []
        for turn, (truth, said) in enumerate(zip(teacher, greedy_turns(model, tokenizer, chat, max_new_tokens))):
            kind = classify(truth, said, said_before)
            counts[kind] += 1
            by_turn.setdefault(min(turn, 8), Counter())[kind] += 1
            said_before.append(parse_agent_output(truth).utterance)
    return {"counts": {kind: counts[kind] for kind in CLASSES}, "by_turn": {turn: {kind: by_turn[turn][kind] for kind in CLASSES} for turn in sorted(by_turn)}}


def table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    lines = ["| model | turns | " + " | ".join(CLASSES) + " |", "|---|---|" + "---|" * len(CLASSES)]
    for name, result in rows:
        total = sum(result["counts"].values())
        lines.append(f"| {name} | {total} | " + " | ".join(f"{result['counts'][kind] / total:.3f}" for kind in CLASSES) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="a finished cpu-lm-scratch run folder")
    parser.add_argument("--checkpoint", nargs="+", required=True, help="model folders to score")
    parser.add_argument("--eval-episodes", type=int, default=240, help="held-out starts (their teacher dialogues)")
    parser.add_argument("--out", type=Path, help="also write the counts as JSON")
    args = parser.parse_args(argv)
    import torch

    from benchmarks.sead_clone_factors import setup
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    with tempfile.TemporaryDirectory() as scratch:  # setup's run folder: only the teacher's dialogues are kept
        config, _, _, held = setup(args.base, Path(scratch), eval_episodes=args.eval_episodes)
    torch.set_num_threads(1)
    turns = [teacher_repeats(chat) for chat in held]
    print(f"{len(held)} held-out teacher dialogues, {sum(t for t, _ in turns)} turns; the teacher itself repeats a phrase it said earlier "
          f"at {sum(r for _, r in turns) / sum(t for t, _ in turns):.3f} of its turns")
    rows = []
    for checkpoint in args.checkpoint:
        loaded = TransformersBackend(checkpoint)
        loaded.model.eval()
        rows.append((checkpoint, errors_of(loaded.model, loaded.tokenizer, held, config.max_new_tokens)))
    print(table(rows))
    for name, result in rows:
        print(f"\n{name}, by turn (turns 8+ pooled):")
        for turn, counts in result["by_turn"].items():
            total = sum(counts.values())
            print(f"  turn {turn}{'+' if turn == 8 else ' '}: {total:4d} turns, " + ", ".join(f"{kind} {counts[kind] / total:.3f}" for kind in CLASSES if counts[kind]))
    if args.out:
        args.out.write_text(json.dumps(dict(rows), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
