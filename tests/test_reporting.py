"""dialogue_gym.reporting: text from models and files is printed escaped, and tables are laid out by
their widest cell, header included (issue 43, item 6)."""

from __future__ import annotations

from dialogue_gym.reporting import format_table, terminal_safe


def test_terminal_safe_writes_controls_bidi_and_lone_surrogates_as_escapes_and_leaves_printable_text():
    assert terminal_safe("caf\u00e9 \u4f60\u597d ok") == "caf\u00e9 \u4f60\u597d ok"
    assert terminal_safe("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert terminal_safe("abc\u202edcba") == "abc\\u202edcba"  # right-to-left override: would show 'abcabcd'
    assert terminal_safe("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert terminal_safe("a\tb\nc\r") == "a\\tb\\nc\\r"


def test_a_table_escapes_names_labels_and_cells_and_pads_to_the_widest_cell_header_included():
    """Attacker: an agent named with a terminal escape and a right-to-left override, a text cell with a
    newline. Every cell is escaped; each column is as wide as its widest cell (the header 'success rate'
    is wider than any value in its column), floats have three decimals."""
    rows = [{"name": "\x1b[2Jevil\u202e", "cr": 0.5, "note": "two\nlines"}, {"name": "b", "cr": 1.0, "note": 7}]
    table = format_table(rows, [("cr", "success rate"), ("note", "note\x07")], "agent")
    assert table.splitlines() == [
        "| agent             | success rate | note\\x07   |",
        "|-------------------|--------------|------------|",
        "| \\x1b[2Jevil\\u202e | 0.500        | two\\nlines |",
        "| b                 | 1.000        | 7          |",
    ]  # escaped name: 4 + 3 + 4 + 6 = 17 characters; 'two\\nlines' 10, wider than 'note\\x07' (8)
