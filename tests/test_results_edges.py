"""Results behaviours pinned by hand (issue 43, item 6: results.py's surviving mutants): the few-starts
note's threshold, and git consulted only in a checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dialogue_gym import results
from dialogue_gym.results import FEW_STARTS, few_starts_note

PACKAGE_ROOT = Path(results.__file__).resolve().parents[1]


def test_the_few_starts_note_is_given_below_thirty_starts_only():
    assert FEW_STARTS == 30
    assert few_starts_note(29) == (
        "note: 29 starts are too few for a bootstrap interval to be trusted (use at least 30); read it as a rough spread."
    )
    assert few_starts_note(1) is not None
    assert few_starts_note(30) is None
    assert few_starts_note(31) is None


def test_git_is_asked_only_in_a_checkout_and_then_names_its_head():
    answer = results._git("rev-parse", "HEAD")
    if not (PACKAGE_ROOT / ".git").exists():
        assert answer is None
        return
    head = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout
    assert answer is not None and answer.returncode == 0 and answer.stdout == head


class _Done:
    """What subprocess.run returns, as much of it as results reads."""

    def __init__(self, returncode: int = 0, stdout: str = ""):
        self.returncode, self.stdout = returncode, stdout


class _Installed:
    def __init__(self, text):
        self.text = text

    def read_text(self, name):
        return self.text if name == "direct_url.json" else None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"vcs_info": {"commit_id": "' + "cd" * 20 + '"}}', "cd" * 20),
        (None, None),  # installed without direct_url.json (from a wheel or an index)
        ('{"vcs_info": {"commit_id": ""}}', None),
        ('{"vcs_info": {"commit_id": 5}}', None),
        ('{"dir_info": {}}', None),
        ("not json", None),
    ],
)
def test_the_installed_revision_is_pips_commit_id_when_it_is_a_non_empty_string(monkeypatch, text, expected):
    monkeypatch.setattr(results.metadata, "distribution", lambda name: _Installed(text))
    assert results.installed_revision() == expected


@pytest.mark.parametrize("answer", [None, _Done(128, "?? dialogue_gym/x.py\0")])
def test_untracked_files_are_unknown_without_a_working_git(monkeypatch, answer):
    monkeypatch.setattr(results, "_git", lambda *arguments: answer)
    assert results.untracked_in_package() is None


def test_untracked_files_are_the_untracked_and_ignored_entries_outside_pycache(monkeypatch):
    listing = " M dialogue_gym/changed.py\0?? dialogue_gym/new.py\0!! dialogue_gym/__pycache__/a.pyc\0!! envs_registry/old.json\0"
    monkeypatch.setattr(results, "_git", lambda *arguments: _Done(0, listing))
    assert results.untracked_in_package() == ["dialogue_gym/new.py", "envs_registry/old.json"]


@pytest.mark.parametrize(
    ("diff", "status", "problems", "dirty"),
    [
        (_Done(0), _Done(0, ""), [], False),
        (_Done(1), _Done(0, ""), [], True),  # a tracked file differs from HEAD
        (_Done(0), _Done(0, "?? dialogue_gym/new.py\0"), [], True),
        (_Done(0), _Done(0, ""), ["dialogue_gym/__pycache__/x: foreign"], True),
        (_Done(2), _Done(0, ""), [], None),  # git diff failed: unknown, not clean
        (_Done(0), _Done(128, ""), [], None),  # git status failed: unknown
    ],
)
def test_git_dirty_is_none_when_git_cannot_tell(monkeypatch, diff, status, problems, dirty):
    from dialogue_gym import integrity

    answers = {"rev-parse": _Done(0, "ab" * 20 + "\n"), "diff": diff, "status": status}
    monkeypatch.setattr(results, "_git", lambda *arguments: answers[arguments[0]])
    monkeypatch.setattr(integrity, "bytecode_problems", lambda roots=None: problems)
    software = results.software()
    assert software["git_revision"] == "ab" * 20 and software["git_dirty"] is dirty


def test_headline_intervals_are_the_ones_the_saved_bootstrap_seed_reproduces():
    """results_of records ``"bootstrap": {"seed": 0}``: compute_headline's default seed must be that one."""
    from dialogue_gym.metrics.core import bootstrap_resamples, percentile_interval, resampled_ratios
    from dialogue_gym.results import CONFIDENCE, AgentResult

    parts = [0.1, 0.9, 0.3, 0.7, 0.2, 0.5, 1.0, 0.0]
    episodes = [{"start": s, "repeat": 0, "seed": 100 + s, "scores": {"success": [parts[s], 1.0]}} for s in range(8)]
    agent = AgentResult("a", False, {}, episodes)
    agent.compute_headline(None, 1, 200)
    numerators, denominators = agent.per_start("success")

    def interval(seed):
        return percentile_interval(resampled_ratios(numerators, denominators, bootstrap_resamples(8, 200, seed)), CONFIDENCE)

    assert interval(0) != interval(1), "the example must tell the seeds apart"
    low, high = interval(0)
    assert agent.headline == {"success": {"value": 0.4625, "low": low, "high": high}}


def test_a_results_file_that_is_not_utf8_is_named_with_its_first_bad_byte(tmp_path):
    from dialogue_gym.errors import ConfigError

    path = tmp_path / "r.json"
    path.write_bytes(b'{"format": "\xff\xfe"}')
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte b'\\xff' at offset 12\), so not a results JSON"):
        results.Results.load(path)


@pytest.mark.parametrize(
    ("provenance", "isolation", "seeds"),
    [
        ({}, "none", "open"),
        ({"isolated": True}, "process", "open"),  # files from before the isolation levels
        ({"isolation": "sandbox", "isolated": True}, "sandbox", "open"),
        ({"isolation": "process", "sealed": True, "agent_limits": {"memory": 1}}, "process", "sealed"),
        ({"sealed": True, "replay": True}, "none", "replay of a sealed run"),
    ],
)
def test_the_setting_of_a_saved_run(provenance, isolation, seeds):
    assert results.setting(provenance) == {"isolation": isolation, "seeds": seeds, "agent_limits": provenance.get("agent_limits")}


@pytest.mark.parametrize("pair", [[1.0, 2.0, 3.0], [1.0], (1.0, 2.0), "12"])
def test_a_score_that_is_not_a_two_item_list_is_refused_as_a_pair(pair):
    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^here must be a \[numerator, denominator\] pair of finite numbers"):
        results._score_pair(pair, "here")


def test_results_of_draws_a_thousand_resamples_by_default_as_its_provenance_says():
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.metrics.core import bootstrap_resamples, percentile_interval, resampled_ratios

    runs = {"sop": evaluate("SEAD-Outbound-v0", "sop", 6, seed=4)}
    provenance = {"env_kwargs": {}, "learner": "agent", "episodes": 6, "repeats": 1, "seed": 4}
    built = results.results_of("SEAD-Outbound-v0", runs, provenance)
    assert built.provenance["bootstrap"] == {"resamples": 1000, "seed": 0, "confidence": 0.95, "unit": "start"}
    agent = built.agent("sop")
    numerators, denominators = agent.per_start("upa")  # a ratio whose interval moves with the resample count

    def interval(resamples):
        return percentile_interval(resampled_ratios(numerators, denominators, bootstrap_resamples(6, resamples, 0)), 0.95)

    assert interval(1000) != interval(1001), "the example must tell the counts apart"
    assert (agent.headline["upa"]["low"], agent.headline["upa"]["high"]) == interval(1000)


def test_the_bootstrap_count_is_an_int_within_the_cells_cap():
    from dialogue_gym.errors import ConfigError
    from dialogue_gym.results import check_resamples

    assert check_resamples(1, 1000) == 1 and check_resamples(50_000, 1000) == 50_000
    assert check_resamples(100_000, 1) == 100_000  # few starts: the resample cap binds
    for bad in (0, 50_001, True, "10", 10.0, None):
        with pytest.raises(ConfigError) as error:
            check_resamples(bad, 1000)
        assert str(error.value) == (
            f"--bootstrap must be an int in [1, 50,000] for 1,000 starts (resamples x starts <= 50,000,000, resamples <= 100,000), "
            f"got {bad!r}; 1000 is the usual choice."
        )
    with pytest.raises(ConfigError, match=r"in \[1, 100,000\] for 1 starts"):
        check_resamples(100_001, 1)
    assert check_resamples(67_658, 739) == 67_658  # 739 x 67,659 = 50,000,001 cells: one too many
    with pytest.raises(ConfigError, match=r"in \[1, 67,658\] for 739 starts"):
        check_resamples(67_659, 739)


def test_compare_draws_a_thousand_resamples_with_seed_zero_by_default():
    from dialogue_gym.results import AgentResult, Results, compare

    def run(parts):
        episodes = [{"start": s, "repeat": 0, "seed": 100 + s, "scores": {"x": [p, 1.0]}} for s, p in enumerate(parts)]
        provenance = {"env_id": "E", "learner": "agent", "episodes": len(parts), "repeats": 1, "seed": 0}
        return Results(provenance, [AgentResult("a", False, {}, episodes)])

    a, b = run([0.1, 0.9, 0.3, 0.7, 0.2, 0.5, 1.0, 0.0]), run([0.4, 0.8, 0.1, 0.9, 0.6, 0.5, 0.3, 0.2])
    default = compare(a, b)
    assert default == compare(a, b, resamples=1000, seed=0)
    assert default != compare(a, b, resamples=1001, seed=0) and default != compare(a, b, resamples=1000, seed=1)
    assert [(row["key"], row["a"], row["b"]) for row in default] == [("x", 0.4625, pytest.approx(0.475, rel=1e-15))]


def test_a_failing_git_rev_parse_falls_back_to_the_installed_revision(monkeypatch):
    """A checkout whose rev-parse fails (a repository with no commit yet) records pip's revision, not git's empty answer."""
    monkeypatch.setattr(results, "_git", lambda *arguments: _Done(128, ""))
    original = results.metadata.distribution
    installed = _Installed('{"vcs_info": {"commit_id": "' + "ef" * 20 + '"}}')
    monkeypatch.setattr(results.metadata, "distribution", lambda name: installed if name == "dialogue_gym" else original(name))
    software = results.software()
    assert software["git_revision"] == "ef" * 20 and software["git_dirty"] is None
