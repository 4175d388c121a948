"""Results a researcher can cite: the summary table, headline metrics with bootstrap intervals and
pass^k, per-episode parts, and the provenance of the run; saved as JSON or CSV, compared pairwise.

A results JSON (``dialogue-gym eval ... --save results.json``)::

    {"format": "dialogue_gym.results/1",
     "provenance": {"env_id", "env_kwargs", "learner", "agents", "episodes", "repeats", "seed", "sealed", "secret", "strata",
                    "metric_kwargs", "bootstrap", "command", "dialogue_gym", "git_revision", "git_dirty",
                    "code_digest", "bytecode_problems",
                    "python", "platform", "libraries", "started", "finished", "seconds"},
     "rows": [{"agent", "privileged", <every summary key>}, ...],
     "headline": {agent: {key: {"value", "low", "high"}, "pass^k": {...}}},
     "episodes": {agent: [{"start", "repeat", "seed", "scores": {key: [numerator, denominator]}}, ...]}}

NaN is written as ``null`` (strict JSON). The CSV holds one row per agent (summary keys, then each
headline key's ``_ci_low`` / ``_ci_high`` and pass^k) under ``# key: value`` provenance lines; only the
JSON holds the episodes, so only it can be compared.

Intervals are percentile bootstrap intervals over *starts* (a start's repeats are resampled together,
since they share a profile), from a fixed-seed generator: the same file always reports the same
intervals. :func:`compare` resamples the starts of two runs together (a paired bootstrap), which needs
both runs to have played the same starts with the same seeds.
"""

from __future__ import annotations

import csv
import io
import json
import math
import platform
import reprlib
import subprocess
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.inputs import regular_file
from dialogue_gym.metrics.core import (
    bootstrap_resamples,
    exact_mean,
    exact_row_sums,
    exact_sum,
    pass_hat_k_per_start,
    percentile_interval,
    ratio_of_sums,
    resampled_ratios,
)
from dialogue_gym.types import Trajectory

FORMAT = "dialogue_gym.results/1"
CONFIDENCE = 0.95
LIBRARIES = ("gymnasium", "pettingzoo", "numpy", "scipy", "pot", "tslearn", "numba", "torch", "transformers", "trl", "vllm", "ray")
"""Libraries whose installed versions the provenance records (those installed)."""
SAVE_SUFFIXES = (".json", ".csv")
FEW_STARTS = 30
"""Below this many starts a percentile bootstrap interval is too narrow to trust: it cannot show
variation the few starts happened not to contain (two starts B won and A lost give [1, 1])."""


def few_starts_note(starts: int) -> str | None:
    if starts >= FEW_STARTS:
        return None
    return f"note: {starts} starts are too few for a bootstrap interval to be trusted (use at least {FEW_STARTS}); read it as a rough spread."


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _git(*arguments: str) -> subprocess.CompletedProcess | None:
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        # --no-optional-locks: reading the revision never writes to the repository.
        return subprocess.run(
            ["git", "--no-optional-locks", "-C", str(root), *arguments], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None


def installed_revision() -> str | None:
    """The commit pip recorded when it installed this package from a git URL (``direct_url.json``'s
    ``vcs_info.commit_id``, PEP 610), for an install that has no ``.git`` beside it; else None."""
    try:
        text = metadata.distribution("dialogue_gym").read_text("direct_url.json")
        commit = json.loads(text or "{}").get("vcs_info", {}).get("commit_id")
    except (metadata.PackageNotFoundError, ValueError, AttributeError, OSError):
        return None
    return commit if isinstance(commit, str) and commit else None


def untracked_in_package() -> list[str] | None:
    """Untracked and ignored files under the package's folders (``dialogue_gym``, ``envs_registry``) in
    its git checkout, but those in ``__pycache__`` (bytecode is checked against its source by
    :func:`~dialogue_gym.integrity.bytecode_problems` instead, so bytecode Python wrote from unchanged
    sources does not make every run dirty); None without git."""
    from dialogue_gym.integrity import ROOTS

    listed = _git("status", "--porcelain", "-z", "--ignored", "--untracked-files=all", "--", *ROOTS)
    if listed is None or listed.returncode != 0:
        return None
    found = []
    for entry in listed.stdout.split("\0"):
        if entry[:3] in ("?? ", "!! ") and "__pycache__" not in Path(entry[3:]).parts:
            found.append(entry[3:])
    return found


def software() -> dict[str, Any]:
    """Package version (``dialogue_gym.__version__``), git revision and whether the checkout differs
    from it, a digest of the package's files and any bytecode that is not its sources'
    (:mod:`dialogue_gym.integrity`), Python, platform and the installed versions of :data:`LIBRARIES`.
    The revision comes from the git checkout the package runs from, else from the package metadata of a
    pip install from a git URL (:func:`installed_revision`; ``git_dirty`` is then None), else it is None.
    ``git_dirty`` is true when a tracked file differs from the revision, a file under the package is
    untracked or ignored (:func:`untracked_in_package`) or its bytecode is foreign."""
    import dialogue_gym
    from dialogue_gym.integrity import bytecode_problems, code_digest

    revision = _git("rev-parse", "HEAD")
    dirty = _git("diff", "--quiet", "HEAD", "--") if revision is not None and revision.returncode == 0 else None
    problems = bytecode_problems()
    untracked = untracked_in_package() if dirty is not None else None
    git_dirty = None if dirty is None or dirty.returncode not in (0, 1) or untracked is None else bool(dirty.returncode == 1 or untracked or problems)
    libraries = {}
    for name in LIBRARIES:
        try:
            libraries[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "dialogue_gym": dialogue_gym.__version__,
        "git_revision": revision.stdout.strip() if revision is not None and revision.returncode == 0 else installed_revision(),
        "git_dirty": git_dirty,
        "code_digest": code_digest(),
        "bytecode_problems": problems,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": libraries,
    }


@dataclass
class AgentResult:
    """One agent's row: its summary, its headline metrics (value, bootstrap interval, pass^k) and the
    per-episode parts they were computed from."""

    name: str
    privileged: bool
    summary: dict[str, Any]
    episodes: list[dict[str, Any]]
    headline: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def from_trajectories(
        cls, name: str, trajectories: Sequence[Trajectory], summary: dict[str, Any], episode_scores: Callable[[Trajectory], dict]
    ) -> AgentResult:
        episodes = [
            {
                "start": t.meta["start"],
                "repeat": t.meta["repeat"],
                "seed": t.seed,
                "scores": {key: [float(n), float(d)] for key, (n, d) in episode_scores(t).items()},
            }
            for t in trajectories
        ]
        return cls(name, any(t.meta.get("privileged") for t in trajectories), summary, episodes)

    def keys(self) -> list[str]:
        return list(self.episodes[0]["scores"]) if self.episodes else []

    def starts(self) -> list[int]:
        return sorted({episode["start"] for episode in self.episodes})

    def per_start(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(numerators, denominators) of ``key`` summed exactly over each start's repeats, in :meth:`starts` order."""
        numerators: dict[int, list[float]] = {start: [] for start in self.starts()}
        denominators: dict[int, list[float]] = {start: [] for start in self.starts()}
        for episode in self.episodes:
            numerator, denominator = episode["scores"][key]
            numerators[episode["start"]].append(numerator)
            denominators[episode["start"]].append(denominator)
        return (
            np.array([exact_sum(values) for values in numerators.values()], dtype=float),
            np.array([exact_sum(values) for values in denominators.values()], dtype=float),
        )

    def compute_headline(self, pass_metric: str | None, repeats: int, resamples: int, seed: int = 0) -> None:
        """Each headline key's value and percentile interval over ``resamples`` bootstrap resamples of
        the starts (NaN bounds when ``resamples`` is 0), and pass^j for j = 1..``repeats``."""
        if not self.episodes:
            return
        indices = bootstrap_resamples(len(self.starts()), resamples, seed) if resamples else None
        headline: dict[str, dict[str, float]] = {}
        for key in self.keys():
            numerators, denominators = self.per_start(key)
            headline[key] = _estimate(ratio_of_sums(numerators, denominators), indices, lambda rows: resampled_ratios(numerators, denominators, rows))
        if pass_metric is not None and repeats > 1:
            successes, trials = self.per_start(pass_metric)
            # A start with a backend failure has fewer than `repeats` completed trials; pass^k leaves it out.
            full = trials >= repeats
            for k in range(1, repeats + 1):
                values = pass_hat_k_per_start(successes[full].astype(int).tolist(), trials[full].astype(int).tolist(), k)
                per_start = np.full(len(trials), math.nan)
                per_start[full] = values
                headline[f"pass^{k}"] = _estimate(
                    exact_mean(values.tolist()), indices, lambda rows, v=per_start: _finite_means(v[rows])
                )
        self.headline = headline


def _finite_means(rows: np.ndarray) -> np.ndarray:
    """The exact mean of each row's finite values (NaN for a row with none), as ``np.nanmean`` but in any order on any CPU."""
    finite = np.isfinite(rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        return exact_row_sums(np.where(finite, rows, 0.0)) / finite.sum(axis=1)


def _estimate(value: float, indices: np.ndarray | None, resample: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
    if indices is None:
        return {"value": value, "low": math.nan, "high": math.nan}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample that holds no counted start is NaN, and skipped
        low, high = percentile_interval(resample(indices), CONFIDENCE)
    return {"value": value, "low": low, "high": high}


@dataclass
class Results:
    """A run's provenance and one :class:`AgentResult` per agent."""

    provenance: dict[str, Any]
    agents: list[AgentResult]

    def agent(self, name: str | None, source: str = "results") -> AgentResult:
        names = [result.name for result in self.agents]
        if name is None:
            if len(self.agents) != 1:
                raise ConfigError(f"{source} holds {len(names)} agents {names}; name the one to compare (--agent-a / --agent-b).")
            return self.agents[0]
        for result in self.agents:
            if result.name == name:
                return result
        raise ConfigError(f"{source} holds no agent {name!r}; its agents are {names}.")

    def to_json(self) -> dict[str, Any]:
        return _strict(
            {
                "format": FORMAT,
                "provenance": self.provenance,
                "rows": [{"agent": a.name, "privileged": a.privileged, **a.summary} for a in self.agents],
                "headline": {a.name: a.headline for a in self.agents},
                "episodes": {a.name: a.episodes for a in self.agents},
            }
        )

    def to_csv(self) -> str:
        rows = []
        for a in self.agents:
            row: dict[str, Any] = {"agent": a.name, "privileged": a.privileged, **a.summary}
            for key, estimate in a.headline.items():
                if key.startswith("pass^"):
                    row[key] = estimate["value"]
                row[f"{key}_ci_low"], row[f"{key}_ci_high"] = estimate["low"], estimate["high"]
            rows.append(row)
        columns = list(dict.fromkeys(column for row in rows for column in row))
        text = io.StringIO()
        for key, value in self.provenance.items():
            text.write(f"# {key}: {json.dumps(_strict(value))}\n")
        writer = csv.DictWriter(text, columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: "" if value is None or (isinstance(value, float) and math.isnan(value)) else value for key, value in row.items()})
        return text.getvalue()

    def save(self, path: str | Path) -> Path:
        """Write ``path`` as JSON or CSV (by its suffix)."""
        target = Path(path)
        suffix = check_save_suffix(target)
        text = _json_text(self.to_json()) if suffix == ".json" else self.to_csv()
        target.write_text(text, encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> Results:
        """Read a results JSON written by :meth:`save`; anything else is a ConfigError naming the path."""
        target = Path(path)
        if target.suffix.lower() == ".csv":
            raise ConfigError(f"{path}: a results CSV holds the table only; compare the JSON (`--save {target.with_suffix('.json')}`).")
        regular_file(target, f"write one with `dialogue-gym eval ... --save {path}`.")  # a FIFO would block the read
        try:
            text = target.read_text(encoding="utf-8")
            if not text.strip():
                raise ConfigError(f"{path}: the file is empty, so not a results JSON; write one with `dialogue-gym eval ... --save`.")
            data = json.loads(text)
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{path}: not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at offset {exc.start}), so not a results JSON; "
                "write one with `dialogue-gym eval ... --save`."
            ) from exc
        except RecursionError:
            raise ConfigError(f"{path}: nested deeper than any results JSON (Python's JSON reader gave up); write one with `dialogue-gym eval ... --save`.") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not a results JSON ({exc}); write one with `dialogue-gym eval ... --save`.") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"{path}: field 'format' must be {FORMAT!r}, got {found!r}; write it with `dialogue-gym eval ... --save`.")
        missing = [key for key in COMPARED if key not in data.get("provenance", {})]
        if missing:
            raise ConfigError(f"{path}: field 'provenance' lacks {missing}; write the file with `dialogue-gym eval ... --save`.")
        try:
            rows = {row["agent"]: row for row in data["rows"]}
            agents = []
            for name, episodes in data["episodes"].items():
                row = dict(rows[name])
                row.pop("agent")
                privileged = bool(row.pop("privileged"))
                summary = {key: math.nan if value is None else value for key, value in row.items()}
                for index, episode in enumerate(episodes):
                    episode["scores"] = {
                        key: _score_pair(pair, f"{path}: field episodes[{name!r}][{index}].scores[{key!r}]") for key, pair in episode["scores"].items()
                    }
                    for key in ("start", "repeat", "seed"):
                        if isinstance(episode[key], bool) or not isinstance(episode[key], int):
                            raise TypeError(f"episode field {key!r} must be an int, got {episode[key]!r}")
                agents.append(AgentResult(name, privileged, summary, episodes, data["headline"].get(name, {})))
            return cls(dict(data["provenance"]), agents)
        except ConfigError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(f"{path}: malformed results file ({type(exc).__name__}: {exc}).") from exc


MAX_SCORE = 1e12
"""The largest magnitude of a saved score part: sums over a million episodes stay finite and exact to
the cent (1e308 passed the finite check but summed to inf)."""


def setting(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """How a saved run was played, beside which episodes: the agent's isolation level (files from before
    the levels say only ``isolated``, then a plain process) and whether its seeds were sealed, a replay
    of a sealed run (``--unseal``: its secret already public) or open. ``compare`` names any difference."""
    isolation = provenance.get("isolation") or ("process" if provenance.get("isolated") else "none")
    seeds = "replay of a sealed run" if provenance.get("replay") else "sealed" if provenance.get("sealed") else "open"
    return {"isolation": isolation, "seeds": seeds, "agent_limits": provenance.get("agent_limits")}


def results_of(
    env_id: str, runs: Mapping[str, Sequence[Trajectory]], provenance: Mapping[str, Any], *, resamples: int = 1000
) -> Results:
    """The ``eval --save`` record of agents already played on ``env_id``'s evaluation sequence (each
    trajectory's ``meta["start"]`` / ``["repeat"]`` set, as :func:`~dialogue_gym.evaluation.evaluate`
    does): every agent's summary with counterpart health, per-episode scores and headline intervals over
    ``resamples`` bootstrap resamples of the starts. ``provenance`` says how they were played (at least
    ``env_kwargs``, ``learner``, ``episodes``, ``repeats`` and ``seed``: what ``compare`` pairs on);
    ``env_id``, the bootstrap, the software and the finishing time are added."""
    from dialogue_gym.health import summary_with_health
    from envs_registry import get, resolve

    entry = get(env_id)
    missing = sorted({"env_kwargs", "learner", "episodes", "repeats", "seed"} - set(provenance))
    if missing:
        raise ConfigError(f"results_of: provenance lacks {missing}; pass how the runs were played (what compare pairs them on).")
    summary = resolve(entry.summary)
    episode_scores = resolve(entry.episode_scores) if entry.episode_scores else lambda trajectory: {}
    agents = []
    for name, trajectories in runs.items():
        row = summary_with_health(trajectories, summary)
        for kept_apart in ("counterpart_health", "health_warnings"):  # as eval --save: health is printed, not a row column
            row.pop(kept_apart)
        agent = AgentResult.from_trajectories(name, trajectories, row, episode_scores)
        agent.compute_headline(entry.pass_metric, int(provenance["repeats"]), resamples)
        agents.append(agent)
    return Results(
        {"env_id": env_id, "agents": list(runs), **provenance,
         "bootstrap": {"resamples": resamples, "seed": 0, "confidence": CONFIDENCE, "unit": "start"}, **software(), "finished": now()},
        agents,
    )


def _score_pair(pair: Any, where: str) -> list[float]:
    """A saved ``[numerator, denominator]`` checked: finite numbers of magnitude <= MAX_SCORE (None, a
    non-finite score saved as strict JSON, reads as 0), denominator >= 0, numerator 0 when the
    denominator is (an episode left out)."""
    if isinstance(pair, list) and len(pair) == 2:
        numerator, denominator = (0.0 if value is None else value for value in pair)
        if all(isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= MAX_SCORE for value in (numerator, denominator)):
            if denominator > 0 or (denominator == 0 and numerator == 0):
                return [float(numerator), float(denominator)]
    raise ConfigError(
        f"{where} must be a [numerator, denominator] pair of finite numbers within +-{MAX_SCORE:g}, the denominator >= 0 "
        f"and the numerator 0 when the denominator is 0 (an episode left out), got {reprlib.repr(pair)}; "
        "re-save the run with `dialogue-gym eval ... --save` rather than editing it."
    )


def _json_text(data: dict[str, Any]) -> str:
    """Indented JSON, except that each episode record is one compact line (thousands of them)."""
    parts = []
    for key, value in data.items():
        if key == "episodes":
            agents = [
                f"  {json.dumps(name)}: [\n" + ",\n".join("   " + json.dumps(e, separators=(",", ":"), allow_nan=False) for e in episodes) + "\n  ]"
                for name, episodes in value.items()
            ]
            text = "{\n" + ",\n".join(agents) + "\n }"
        else:
            text = json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def check_save_suffix(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SAVE_SUFFIXES:
        raise ConfigError(f"--save {str(path)!r}: the file must end in .json or .csv (the format is chosen by the suffix), got {suffix or 'no suffix'!r}.")
    return suffix


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (strict JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return _strict(value.item())
    if isinstance(value, dict):
        return {str(key): _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def _played(result: AgentResult) -> set[tuple[int, int, int]]:
    return {(episode["start"], episode["repeat"], episode["seed"]) for episode in result.episodes}


MAX_RESAMPLES = 100_000
"""Most bootstrap resamples ``compare`` draws (10,000 already pin a 95% interval's ends to about 0.5%)."""
MAX_BOOTSTRAP_CELLS = 50_000_000
"""Most resamples x starts: the index matrix alone takes 8 bytes a cell (400 MB here)."""


def check_resamples(resamples: Any, starts: int, flag: str = "--bootstrap") -> int:
    """``resamples`` as an int in [1, the cap for ``starts`` starts], or ConfigError naming the cap."""
    cap = max(1, min(MAX_RESAMPLES, MAX_BOOTSTRAP_CELLS // max(starts, 1)))
    if isinstance(resamples, bool) or not isinstance(resamples, int) or not 1 <= resamples <= cap:
        raise ConfigError(
            f"{flag} must be an int in [1, {cap:,}] for {starts:,} starts (resamples x starts <= {MAX_BOOTSTRAP_CELLS:,}, resamples <= "
            f"{MAX_RESAMPLES:,}), got {resamples!r}; 1000 is the usual choice."
        )
    return resamples


COMPARED = ("env_id", "learner", "episodes", "repeats", "seed")
"""Provenance fields two runs must share to be compared episode by episode."""


def compare(
    a: Results, b: Results, agent_a: str | None = None, agent_b: str | None = None, *, resamples: int = 1000, seed: int = 0
) -> list[dict[str, Any]]:
    """Paired comparison of two agents on the same starts and seeds: for every headline key both
    have, A's and B's values, B - A, and the percentile interval of B - A over ``resamples``
    bootstrap resamples of the starts (the same resample for both runs); ``significant`` when the
    interval excludes 0. Runs with different env id, learner, episodes, repeats or seed, or whose
    episodes do not match by (start, repeat, seed), are refused with a ConfigError."""
    # a sealed run's secret seeds its episodes as --seed does an open run's (files from before sealing have none)
    different = {
        key: (a.provenance.get(key), b.provenance.get(key)) for key in (*COMPARED, "secret") if a.provenance.get(key) != b.provenance.get(key)
    }
    if different:
        listed = "; ".join(f"{key}: {left!r} vs {right!r}" for key, (left, right) in different.items())
        raise ConfigError(
            f"Cannot compare runs that played different episodes ({listed}); evaluate both with the same id, learner, --episodes, "
            "--repeats and --seed (sealed: the second with --unseal and the first run's secret)."
        )
    first, second = a.agent(agent_a, "A"), b.agent(agent_b, "B")
    expected = a.provenance["episodes"] * a.provenance["repeats"]
    for result in (first, second):
        if len(result.episodes) != expected or len(_played(result)) != expected:
            raise ConfigError(
                f"{result.name!r} holds {len(result.episodes)} episodes ({len(_played(result))} distinct) for "
                f"{a.provenance['episodes']} starts x {a.provenance['repeats']} repeats; a results file has one per (start, repeat)."
            )
    if _played(first) != _played(second):
        missing = len(_played(first) ^ _played(second))
        raise ConfigError(f"Cannot pair the episodes of {first.name!r} and {second.name!r}: {missing} (start, repeat, seed) keys are in one run only.")
    indices = bootstrap_resamples(len(first.starts()), check_resamples(resamples, len(first.starts())), seed)
    rows = []
    for key in [key for key in first.keys() if key in second.keys()]:
        (na, da), (nb, db) = first.per_start(key), second.per_start(key)
        value_a, value_b = ratio_of_sums(na, da), ratio_of_sums(nb, db)
        with np.errstate(invalid="ignore"):
            low, high = percentile_interval(resampled_ratios(nb, db, indices) - resampled_ratios(na, da, indices), CONFIDENCE)
        rows.append(
            {"key": key, "a": value_a, "b": value_b, "difference": value_b - value_a, "low": low, "high": high,
             "significant": bool(low > 0 or high < 0)}
        )
    return rows
