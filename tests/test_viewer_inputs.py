"""The viewer's reader against deep nesting (issue 43, item 6): objects count as arrays do, a record of
exactly MAX_RECORD_DEPTH levels is read and one level more is one ConfigError naming the line."""

from __future__ import annotations

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.viewer import MAX_RECORD_DEPTH, load_run


def nested(opening: str, closing: str, levels: int) -> str:
    """A JSON object nested ``levels`` deep (the outer object included)."""
    inner = "1"
    for _ in range(levels - 1):
        inner = f'{{"a": {inner}}}' if opening == "{" else f"[{inner}]"
    return f'{{"scenario": "x", "deep": {inner}}}' if levels > 1 else '{"scenario": "x"}'


@pytest.mark.parametrize("opening, closing", [("{", "}"), ("[", "]")])
def test_a_record_nested_exactly_the_limit_is_read_and_one_level_more_is_refused_for_objects_and_arrays(tmp_path, opening, closing):
    path = tmp_path / "run.jsonl"
    path.write_text(nested(opening, closing, MAX_RECORD_DEPTH) + "\n")
    assert load_run(path)[0]["scenario"] == "x"
    path.write_text('{"scenario": "ok"}\n' + nested(opening, closing, MAX_RECORD_DEPTH + 1) + "\n")
    with pytest.raises(ConfigError, match=rf"line 2 nests arrays/objects deeper than {MAX_RECORD_DEPTH} levels, deeper than any trajectory"):
        load_run(path)


def test_objects_nested_far_deeper_than_python_can_parse_are_one_config_error_not_a_recursion_error(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="line 1 nests arrays/objects deeper than"):
        load_run(path)
