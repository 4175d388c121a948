"""``dialogue-gym --help`` and every verb's help read as plain text, list every verb, and say what each
option does and what it is when left out (issue 44)."""

from __future__ import annotations

import argparse
import re

import pytest

from dialogue_gym.cli import build_parser, plain_text

PARSER = build_parser()
VERBS = PARSER._subparsers._group_actions[0].choices


def test_the_top_level_help_is_plain_text_and_lists_every_verb():
    text = PARSER.format_help()
    assert "``" not in text and not re.search(r":(mod|func|class|meth|data|attr):`", text)
    examples = {line.split()[1] for line in text.splitlines() if line.strip().startswith("dialogue-gym ") and len(line.split()) > 1}
    assert set(VERBS) <= examples, f"verbs without an example line: {sorted(set(VERBS) - examples)}"


def test_plain_text_drops_rest_markup_only():
    assert plain_text("``eval`` (see :mod:`dialogue_gym.audit`, :func:`~x.y`) is *open-book*; 2 * 3 * 4") == (
        "eval (see dialogue_gym.audit, x.y) is open-book; 2 * 3 * 4"
    )


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_has_a_description_and_every_option_help_and_a_default(verb):
    parser = VERBS[verb]
    assert parser.description, f"`dialogue-gym {verb} --help` has no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        name = "/".join(action.option_strings)
        assert action.help, f"{verb} {name} has no help"
        if action.required or isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            continue  # a flag is off unless given; a required option has no default
        assert "default" in action.help, f"{verb} {name}'s help does not say its default ({action.default!r})"


def test_serve_help_gives_host_and_port_with_their_defaults():
    text = " ".join(VERBS["serve"].format_help().split())
    assert "--host HOST address to listen on (default: 127.0.0.1" in text
    assert "--port PORT TCP port to listen on, 1-65535 (default: 8000)" in text
