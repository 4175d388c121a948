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


ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


def test_the_readme_is_a_front_page():
    """Issue 44: at most 300 lines, the two commands as CI runs them, and links into the docs."""
    assert len(README.splitlines()) <= 300
    assert "pip install -e . && dialogue-gym eval SEAD-Outbound-v0 --agent random,sop,adaptive,oracle --episodes 1200 --seed 0" in README
    assert 'pip install -e ".[test,train,ray]" && python -m pytest' in README  # .ci/run runs exactly this
    for page in ["getting-started.md", "evaluation.md", "training.md", "viewer.md", "integrations.md", "citing.md"]:
        assert f"](docs/{page})" in README, page
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).exists(), link
    assert README.count("<!-- generated: baselines ") == 1  # one generated baseline table, no hand-typed one


# What the README held before it became a front page, and the docs page that holds it now.
MOVED = {
    "notes/sead.md": ["## Training: SEAD's self-evolving loop", "pass^2", "cpu-strategy-plus-long", "Curriculum ablation",
                      "<!-- generated: compare training/sead-cpu-lm-scratch-seed0/before.json training/sead-cpu-lm-scratch-seed0/after.json -->"],
    "notes/rlada.md": ["**Co-evolution**", "python -m trainers.rlada.sweep --seeds 3"],
    "notes/tracer.md": ["python -m trainers.tracer.sweep --seeds 5", "**SmolLM2 as the simulator, SFT on CPU.**"],
    "notes/speed.md": ["python benchmarks/compare_revisions.py", "**LLM turns reuse their prefix.**"],
    "notes/llm-counterparts.md": ["dialogue-gym fidelity SEAD-Outbound-v0 --role user", "summary_with_health"],
    "evaluation.md": ["## `dialogue-gym audit`", "fingerprint_match", "--unseal SECRET", "**Evaluation order, intervals, saved results.**"],
    "backends.md": ["### Record / replay", "### Scaling rollouts out on Ray", "continuous\nbatching"],
    "integrations.md": ["## verifiers", "environment_factory(\"RLADA-Banking-v0\")", "test_every_role_of_every_id_can_be_the_learner"],
    "reliability.md": ["python benchmarks/hostile_input.py", "run.lock"],
    "concepts.md": ["## Where things live", "envs_registry/  the one table of ids"],
}


@pytest.mark.parametrize("page", sorted(MOVED))
def test_what_left_the_readme_is_in_the_docs(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    for needle in MOVED[page]:
        assert needle in text, (page, needle)
    assert page in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")  # reachable from the site's navigation
