"""Plain-text tables for metric reports (the CLI and every scenario's ``report``)."""

from __future__ import annotations

from typing import Any, Sequence


PRIVILEGED_MARK = "*"
"""Marks a table row whose policy read the privileged channel (hidden state): an upper bound, not a fair entry."""
PRIVILEGED_NOTE = f"{PRIVILEGED_MARK} reads the privileged channel (hidden state): an upper bound, not a fair baseline."


def terminal_safe(line: str) -> str:
    """``line`` with control characters, bidi controls and lone surrogates written as escapes (``\\x1b``,
    ``\\u202e``, ``\\ud800``): text from a model or a file, printed, must neither drive the terminal, nor
    reorder what is shown, nor fail to encode."""
    if line.isprintable():
        return line
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in line)


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], first: str) -> str:
    """A Markdown table: one row per dict (its ``"name"`` first), one column per ``(key, label)``; every
    cell is :func:`terminal_safe` (names come from files and agents)."""
    header = [first, *(terminal_safe(label) for _, label in columns)]
    body = [
        [terminal_safe(str(row["name"])), *(f"{row[key]:.3f}" if isinstance(row[key], float) else terminal_safe(str(row[key])) for key, _ in columns)]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(line: list[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths)) + " |"

    return "\n".join([render(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(render, body)])
