"""The README's Gymnasium and PettingZoo examples run as written."""

import re
from pathlib import Path

import pytest

README = (Path(__file__).parent.parent / "README.md").read_text()


@pytest.mark.parametrize("section", ["## Gymnasium", "## PettingZoo"])
def test_readme_example_runs(section):
    body = README.split(section, 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    exec(compile(code, f"README {section}", "exec"), {})
