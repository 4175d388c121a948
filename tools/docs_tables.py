"""Every number in the docs comes from a saved results file, through this one script.

    python tools/docs_tables.py                 # rewrite every generated block in docs/ and README.md from docs/results/
    python tools/docs_tables.py --check         # exit 1 naming each block that differs (what the tests run)
    python tools/docs_tables.py --eval ENV_ID[.VARIANT] -- --agent a,b --episodes N --seed S
                                                # run `dialogue-gym eval ENV_ID ... --save docs/results/ENV_ID[.VARIANT].json`
                                                # in a clean checkout of HEAD (a temporary git worktree), so
                                                # the saved provenance names a revision whose code made it
    python tools/docs_tables.py --audit ENV_ID -- --sealed --isolate sandbox
                                                # the same for `dialogue-gym audit`, saved in docs/results/audits/
    python tools/docs_tables.py --train NAME -- TRAINER ARGS
                                                # run `python -m trainers.TRAINER ARGS` in a clean worktree
                                                # of HEAD and keep the files its summary reads in
                                                # docs/results/training/NAME/ with run.json (how it was made)
    python tools/docs_tables.py --benchmark NAME [-- ARGS]
                                                # run `python benchmarks/NAME.py ARGS`, keep its output in
                                                # docs/results/benchmarks/NAME.txt with the command and revision;
                                                # NAME.LABEL keeps another output of benchmarks/NAME.py

A generated block in a Markdown page is the text between ``<!-- generated: KIND NAME -->`` and
``<!-- end generated -->``; nothing between them is written by hand:

* ``baselines ENV_ID[.VARIANT]``: the summary table ``dialogue-gym eval`` printed for ``docs/results/ENV_ID[.VARIANT].json``
  (the rows the CLI's :func:`~dialogue_gym.reporting.format_table` renders from the saved summaries,
  the privileged note, the headline intervals, the command and its provenance);
* ``audit ENV_ID``: the tables ``dialogue-gym audit`` printed for ``docs/results/audits/ENV_ID.json``
  (every audited role's bounds and probes), the verdict and how the audit was made;
* ``audits ENV_ID ...``: one summary row per audited role of each saved audit (fair order with scores,
  the fair ceiling, the degenerate, blind and sealed-probe policies nearest their bounds, the verdict);
* ``benchmark NAME``: the saved output of ``benchmarks/NAME.py`` as a text block (``NAME.LABEL``: another
  saved output of ``benchmarks/NAME.py``, e.g. one run on other files for a later section);
* ``compare A.json[#agent] B.json[#agent]``: what ``dialogue-gym compare`` prints for two saved runs
  under ``docs/results/`` (a trainer's held-out before and after files, or two agents of one run).
* ``trained training/NAME``: what the trainer printed at the end of the run saved by ``--train NAME``
  (its own ``summary`` function, reading the saved files), and how the run was made;
* ``agreement RUN/agreement.json ...``: a trainer's teacher-forced agreement with its expert, one row per
  stage (behaviour cloning, each DAgger round) of each file, and one more where the stage was also scored
  on training dialogues;
* ``presets TRAINER``: the presets of ``trainers/TRAINER/config.py`` (``PRESETS``), one row per field some
  preset sets, with the field's default and each preset's value (blank: the preset keeps the default).

Tables are rendered by the CLI's own functions, so a change of the table code or of a saved file shows
up as a stale block in ``tests/test_docs.py``; rerun this script (and commit both) to refresh them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
BENCHMARKS = RESULTS / "benchmarks"
AUDITS = RESULTS / "audits"
TRAINING = RESULTS / "training"
TRAINERS = ("sead", "tracer", "rlada")
BLOCK = re.compile(r"(<!-- generated: (\w+) ([\w./#-]+(?: [\w./#-]+)*) -->\n)(.*?)(<!-- end generated -->)", re.S)


def tables(results) -> str:
    """The summary table, the privileged note and the headline intervals of a loaded
    :class:`~dialogue_gym.results.Results`, rendered as ``dialogue-gym eval`` renders them."""
    from dialogue_gym.cli import headline_table
    from dialogue_gym.health import with_format_column
    from dialogue_gym.metrics.episodes import LABELS
    from dialogue_gym.reporting import PRIVILEGED_MARK, PRIVILEGED_NOTE, format_table
    from envs_registry import get, resolve

    provenance = results.provenance
    entry = get(provenance["env_id"])
    columns = with_format_column(resolve(entry.columns))
    rows = [{"name": agent.name + PRIVILEGED_MARK * agent.privileged, **agent.summary} for agent in results.agents]
    parts = [format_table(rows, columns, "agent")]
    if any(agent.privileged for agent in results.agents):
        parts.append("\n" + PRIVILEGED_NOTE.replace(PRIVILEGED_MARK, "\\" + PRIVILEGED_MARK, 1))  # not a Markdown bullet
    labels = {**LABELS, **dict(columns)}
    if any(agent.headline for agent in results.agents):
        parts.append(
            f"\nHeadline metrics with 95% percentile bootstrap intervals over the {provenance['episodes']} starts "
            f"({provenance['bootstrap']['resamples']} resamples):\n"
        )
        parts.append(headline_table(results.agents, labels, labels.get(entry.pass_metric, entry.pass_metric)))
    return "\n".join(parts)


def saved_command(provenance: dict) -> list[str]:
    """The ``dialogue-gym eval`` arguments of a saved run, without ``--quiet`` and ``--save``."""
    arguments = shlex.split(provenance["command"])[1:]
    kept = []
    for argument in arguments:
        if kept and kept[-1] == "--save":
            kept.pop()
        elif argument != "--quiet":
            kept.append(argument)
    return kept


def replay_command(provenance: dict) -> list[str]:
    """The ``dialogue-gym eval`` arguments that play a saved run's episodes again in this process: a
    sealed run's ``--sealed`` becomes ``--unseal SECRET`` (its revealed secret), and the agents play
    in-process (isolation changes where an agent runs, not its episodes; ``tests/test_isolation.py``)."""
    arguments, kept = saved_command(provenance), []
    for previous, argument in zip([None, *arguments], arguments):
        if argument == "--sealed":
            kept += ["--unseal", provenance["secret"]]
        elif argument != "--isolate" and not (previous == "--isolate" and argument in ("sandbox", "process", "none")):
            kept.append(argument)
    return kept


def _setting(provenance: dict) -> str:
    """How a saved run was played, in words: sealed or open-book, and where its agents ran."""
    seeds = "sealed (secret revealed in the file)" if provenance.get("sealed") else "open-book"
    return f"{seeds}, agents isolated: {provenance.get('isolation', 'none')}"


def baselines(name: str) -> str:
    """The tables `dialogue-gym eval` printed for the saved run ``docs/results/NAME.json``: ``NAME`` is an
    id (its published baselines) or ``ID.VARIANT``, another run of that id (ids hold no dots)."""
    from dialogue_gym.results import Results

    env_id = name.partition(".")[0]
    path = RESULTS / f"{name}.json"
    results = Results.load(path)
    provenance = results.provenance
    if provenance["env_id"] != env_id:
        raise SystemExit(f"docs/results/{name}.json holds a run of {provenance['env_id']}, not {env_id}.")
    revision = (provenance.get("git_revision") or "unknown")[:7]
    dirty = {True: " with local changes", False: ", a clean tree"}.get(provenance.get("git_dirty"), ", tree state unknown")
    return (
        f"{tables(results)}\n\nMade by `{shlex.join(['dialogue-gym', *saved_command(provenance)])}` ({_setting(provenance)}; "
        f"dialogue_gym {provenance['dialogue_gym']}, revision {revision}{dirty}, code digest "
        f"{(provenance.get('code_digest') or 'unknown')[:12]}, {provenance['finished'][:10]}; saved as "
        f"`docs/results/{name}.json`; `dialogue-gym {shlex.join(replay_command(provenance))}` plays the same episodes).\n"
    )


def saved_audit(env_id: str) -> dict:
    """``docs/results/audits/ENV_ID.json``, checked to be an audit of ``env_id``."""
    from dialogue_gym.audit import load_audit

    path = AUDITS / f"{env_id}.json"
    if not path.exists():
        raise SystemExit(f"no saved audit docs/results/audits/{env_id}.json; run `python tools/docs_tables.py --audit {env_id} -- ...`.")
    saved = load_audit(path)
    if saved["provenance"]["env_id"] != env_id:
        raise SystemExit(f"{path.relative_to(ROOT)} holds an audit of {saved['provenance']['env_id']}, not {env_id}.")
    return saved


def audited(env_id: str) -> str:
    """The tables `dialogue-gym audit` printed for the saved audit of ``env_id``, and how it was made."""
    saved = saved_audit(env_id)
    provenance = saved["provenance"]
    arguments = saved_command(provenance)
    tables = "\n\n".join(record["table"] for record in saved["audits"])
    verdict = f"{saved['failed']} bound(s) broken" if saved["failed"] else "every bound holds"
    revision = (provenance.get("git_revision") or "unknown")[:7]
    return (
        f"{tables}\n\n{verdict}. Made by `{shlex.join(['dialogue-gym', *arguments])}` ({_setting(provenance)}; dialogue_gym "
        f"{provenance['dialogue_gym']}, revision {revision}, a clean tree, {provenance['finished'][:10]}, {provenance['seconds']:.0f} s; saved as "
        f"`docs/results/audits/{env_id}.json`" + (f"; `--unseal {provenance['secret']}` plays the same episodes" if provenance.get("sealed") else "") + ").\n"
    )


def audit_summary(names: str) -> str:
    """One row per audited role of each saved audit named (``ENV_ID ...``): the fair baselines in order
    with their scores, the fair ceiling, the count of degenerate and blind policies with the one nearest
    its bound, the sealed probe nearest its bound, and the verdict."""
    from dialogue_gym.reporting import PRIVILEGED_MARK

    def nearest(rows: list[dict], kind: str) -> str:
        chosen = [row for row in rows if row["kind"] == kind]
        if not chosen:
            return "-"
        top = max(chosen, key=lambda row: (row["score"] - row["bound"], row["name"]))  # nearest its bound; ties by name
        return f"{len(chosen)}: {top['name']} {top['score']:.3f} (bound {top['bound']:.3f})"

    lines = [
        "| id | learner | score | fair order | fair ceiling | degenerate (count: nearest its bound) | blind | sealed probes | bounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id in names.split():
        saved = saved_audit(env_id)
        for record in saved["audits"]:
            rows, scores = record["rows"], record["scores"]
            shown = {part for row in rows if row["kind"] == "fair order" for part in row["name"].split(" < ")}
            marked = {name.rstrip(PRIVILEGED_MARK) for name in shown if name.endswith(PRIVILEGED_MARK)}
            order = " < ".join(f"{name}{PRIVILEGED_MARK * (name in marked)} {scores[name]:.3f}" for name in record["fair_order"])
            ceiling = ", ".join(f"{row['name']} {row['score']:.3f}" for row in rows if row["kind"] == "fair ceiling") or "-"
            probes = nearest(rows, "probe") if saved["provenance"].get("sealed") else "open-book"
            verdict = f"{record['failed']} broken" if record["failed"] else "all hold"
            lines.append(
                f"| `{record['env_id']}` | {record['learner']} | {record['score']} | {order} | {ceiling} | {nearest(rows, 'degenerate')} | "
                f"{nearest(rows, 'blind')} | {probes} | {verdict} |"
            )
    return "\n".join(lines) + "\n"


def benchmark(name: str) -> str:
    path = BENCHMARKS / f"{name}.txt"
    if not path.exists():
        raise SystemExit(f"no saved output docs/results/benchmarks/{name}.txt; run `python tools/docs_tables.py --benchmark {name}`.")
    return "```text\n" + path.read_text(encoding="utf-8").rstrip("\n") + "\n```\n"


def compared(files: str) -> str:
    """What ``dialogue-gym compare A B`` prints for two saved runs (``A.json[#agent] B.json[#agent]``,
    paths under docs/results/), with the paths as the page names them."""
    import io

    from dialogue_gym.cli import main as cli

    try:
        (a, _, agent_a), (b, _, agent_b) = (name.partition("#") for name in files.split())
    except ValueError:
        raise SystemExit(f"a compare block names two runs, `A.json[#agent] B.json[#agent]`; got {files!r}.") from None
    argv = ["compare", str(RESULTS / a), str(RESULTS / b)]
    argv += ["--agent-a", agent_a] if agent_a else []
    argv += ["--agent-b", agent_b] if agent_b else []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli(argv)
    if code:
        raise SystemExit(f"`dialogue-gym {shlex.join(argv)}` exited {code}.")
    text = printed.getvalue().replace(str(RESULTS) + os.sep, "docs/results/").strip("\n")
    head, _, rest = text.partition("\n\n")
    command = shlex.join(["dialogue-gym", "compare", f"docs/results/{a}", f"docs/results/{b}", *argv[3:]])
    return f"{head}:\n\n{rest}\n\nMade by `{command}`.\n"


def agreement(files: str) -> str:
    """A table of teacher-forced agreement, one row per stage of each saved ``agreement.json`` (a trainer's
    ``results/agreement.json``, or rows of the same form under ``stages``), paths under docs/results/."""
    import json

    lines = ["| run | stage | steps | whole turn | utterance | turn 1 | turns 8+ | turns |", "|---|---|---|---|---|---|---|---|"]
    for file in files.split():
        path = RESULTS / file
        if not path.exists():
            raise SystemExit(f"no saved agreement file docs/results/{file}; copy the run's results/agreement.json there.")
        for stage in json.loads(path.read_text(encoding="utf-8"))["stages"]:
            # A stage scored on training chats too (``train_*``) gets a second row: both low is under-fitting,
            # only the held-out one low is over-fitting.
            for prefix, label in (("", stage["stage"]), ("train_", f"{stage['stage']} (training chats)")):
                if f"{prefix}agreement" not in stage:
                    continue
                per_turn, counts = stage[f"{prefix}agreement_per_turn"], stage[f"{prefix}turns_per_turn"]
                late = sum(a * n for a, n in zip(per_turn[8:], counts[8:])) / max(1, sum(counts[8:]))
                lines.append(
                    f"| {Path(file).parent.name} | {label} | {int(stage['steps']) if 'steps' in stage else ''} | {stage[f'{prefix}agreement']:.3f} | "
                    f"{stage.get(f'{prefix}utterance_agreement', float('nan')):.3f} | {per_turn[1]:.3f} | {late:.3f} | {stage[f'{prefix}turns']} |"
                )
    return "\n".join(lines) + "\n"


def saved_run(name: str) -> tuple[Path, dict]:
    """The folder ``docs/results/NAME`` saved by ``--train`` and its ``run.json`` (how the run was made)."""
    import json

    folder = RESULTS / name
    if not (folder / "run.json").exists():
        raise SystemExit(f"no saved training run docs/results/{name}/run.json; run `python tools/docs_tables.py --train {Path(name).name} -- TRAINER ARGS`.")
    return folder, json.loads((folder / "run.json").read_text(encoding="utf-8"))


def trained(name: str) -> str:
    """What ``python -m trainers.TRAINER`` printed at the end of a run saved by ``--train``, rendered by
    the trainer's own ``summary`` from the saved files, and how the run was made."""
    import importlib

    from trainers.common.rundir import RunDir

    folder, made = saved_run(name)
    lines = importlib.import_module(f"trainers.{made['trainer']}.train").summary(RunDir(folder))
    command = shlex.join(["python", "-m", f"trainers.{made['trainer']}", *made["arguments"]])
    return (
        "```text\n" + "\n".join(lines) + "\n```\n\n"
        f"Made by `{command}` (revision {made['revision'][:7]}, a clean tree, {made['finished'][:10]}, {made['cpus']} CPUs, "
        f"load average {made['load']:.1f} at the end, {made['seconds'] / 60:.0f} min; files in `docs/results/{name}/`).\n"
    )


def presets(trainer: str) -> str:
    """The table of a trainer's presets: every field some preset sets (in the config's field order), its
    default, and what each preset sets it to, shown as the trainer's ``--help`` shows values."""
    import dataclasses
    import importlib

    from trainers.common.cli import _shown

    if trainer not in TRAINERS:
        raise SystemExit(f"a presets block names a trainer, one of {', '.join(TRAINERS)}; got {trainer!r}.")
    module = importlib.import_module(f"trainers.{trainer}.config")
    config_class = type(module.build_config())
    set_somewhere = {name for values in module.PRESETS.values() for name in values}
    lines = ["| field | default | " + " | ".join(f"`{name}`" for name in module.PRESETS) + " |", "|---" * (len(module.PRESETS) + 2) + "|"]
    for spec in dataclasses.fields(config_class):
        if spec.name not in set_somewhere:
            continue
        default = spec.default if spec.default is not dataclasses.MISSING else spec.default_factory()
        cells = [_shown(values[spec.name]) if spec.name in values else "" for values in module.PRESETS.values()]
        lines.append(f"| `{spec.name}` | {_shown(default)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


KINDS = {
    "baselines": baselines, "benchmark": benchmark, "compare": compared, "agreement": agreement, "audit": audited, "audits": audit_summary,
    "trained": trained, "presets": presets,
}


def render(text: str, where: str = "page") -> str:
    """``text`` with every generated block rewritten from the saved results."""

    def replace(match: re.Match) -> str:
        kind, name = match.group(2), match.group(3)
        if kind not in KINDS:
            raise SystemExit(f"{where}: unknown generated block kind {kind!r}; known: {sorted(KINDS)}.")
        return match.group(1) + KINDS[kind](name) + match.group(5)

    return BLOCK.sub(replace, text)


def pages() -> list[Path]:
    """Every page with a generated block: the docs and the README."""
    candidates = [*sorted(DOCS.rglob("*.md")), *[path for path in [ROOT / "README.md"] if path.exists()]]
    return [path for path in candidates if "<!-- generated:" in path.read_text(encoding="utf-8")]


def regenerate(kind: str, name: str) -> str:
    """The command that makes a block's saved file anew (then ``python tools/docs_tables.py`` rewrites the block)."""
    from dialogue_gym.results import Results

    if kind == "baselines":
        provenance = Results.load(RESULTS / f"{name}.json").provenance
        return f"python tools/docs_tables.py --eval {name} -- {shlex.join(saved_command(provenance)[2:])}"
    if kind in ("audit", "audits"):
        commands = []
        for env_id in name.split():
            arguments = saved_command(saved_audit(env_id)["provenance"])[2:]
            commands.append(f"python tools/docs_tables.py --audit {env_id} -- {shlex.join(arguments)}")
        return "; ".join(commands)
    if kind == "trained":
        made = saved_run(name)[1]
        return f"python tools/docs_tables.py --train {Path(name).name} -- {shlex.join([made['trainer'], *made['arguments']])}"
    if kind == "presets":  # rendered from the config module itself: there is no saved file to make anew
        return f"python tools/docs_tables.py (from trainers/{name}/config.py's PRESETS)"
    if kind == "benchmark":
        path = BENCHMARKS / f"{name}.txt"
        first = path.read_text(encoding="utf-8").partition("\n")[0] if path.exists() else ""
        arguments = first.removeprefix(f"$ python benchmarks/{script_of(name)}.py").strip()
        return f"python tools/docs_tables.py --benchmark {name}" + (f" -- {arguments}" if arguments else "")
    commands = []
    # An agreement file sits beside its run's teacher.json, whose provenance names the trainer.
    files = {part.partition("#")[0]: str(Path(part).parent / "teacher.json") if kind == "agreement" else part.partition("#")[0] for part in name.split()}
    for file, results_file in files.items():
        provenance = Results.load(RESULTS / results_file).provenance
        if "trainer" in provenance:  # a trainer's held-out evaluation: its run writes results/*.json
            config = provenance.get("config", {})
            commands.append(
                f"python -m {provenance['trainer']} --preset {config.get('preset')} --seed {config.get('seed')} "
                f"(then copy its results/{Path(file).name} to docs/results/{file})"
            )
        else:  # a saved eval run, docs/results/ENV_ID[.VARIANT].json
            commands.append(regenerate("baselines", file.removesuffix(".json")))
    return "; ".join(dict.fromkeys(commands))


def stale() -> list[str]:
    """``page: kind name (made by: COMMAND)`` for every generated block that differs from what the saved
    results give, with the command that makes its saved file anew."""
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        fresh = render(text, str(page))
        old_blocks, new_blocks = BLOCK.findall(text), BLOCK.findall(fresh)
        for old, new in zip(old_blocks, new_blocks):
            if old != new:
                found.append(f"{page.relative_to(ROOT)}: {old[1]} {old[2]} (made by: {regenerate(old[1], old[2])})")
    return found


def write() -> list[Path]:
    changed = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        fresh = render(text, str(page))
        if fresh != text:
            page.write_text(fresh, encoding="utf-8")
            changed.append(page)
    return changed


def run_eval(name: str, arguments: list[str]) -> None:
    """``dialogue-gym eval ENV_ID ARGUMENTS --save docs/results/NAME.json`` (``NAME`` is ``ENV_ID`` or
    ``ENV_ID.VARIANT``), played by the code of HEAD in a clean worktree (:func:`run_in_clean_tree`)."""
    from dialogue_gym.results import Results

    run_in_clean_tree("eval", name.partition(".")[0], arguments, RESULTS / f"{name}.json", lambda saved: Results.load(saved).provenance)


def run_audit(env_id: str, arguments: list[str]) -> None:
    """``dialogue-gym audit ENV_ID ARGUMENTS --save docs/results/audits/ENV_ID.json`` in a clean worktree;
    an audit with a broken bound (exit 1) is saved too: the page shows the ``NO``."""
    from dialogue_gym.audit import load_audit

    run_in_clean_tree("audit", env_id, arguments, AUDITS / f"{env_id}.json", lambda saved: load_audit(saved)["provenance"], exits=(0, 1))


@contextlib.contextmanager
def clean_worktree(packages: tuple[str, ...]) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """``(scratch, tree, environment)``: a temporary clean worktree of HEAD in a scratch folder, and the
    environment that runs its code (its packages first on the path, no bytecode or compiled-kernel caches
    written into it), so what a run saves was made by a committed revision and nothing else. Uncommitted
    changes under ``packages`` are named on stderr: they are not in the run."""
    import tempfile

    changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", *packages], capture_output=True, text=True, check=True).stdout
    if changed.strip():
        print(f"note: uncommitted changes under {', '.join(packages)} are not in this run (it plays HEAD):\n{changed}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="docs-tables-") as folder:
        scratch = Path(folder)
        tree = scratch / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach", str(tree), "HEAD"], check=True)
        try:
            yield scratch, tree, {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NUMBA_CACHE_DIR": str(scratch / "numba"), "PYTHONPATH": str(tree)}
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def run_in_clean_tree(command: str, env_id: str, arguments: list[str], target: Path, provenance_of, exits: tuple[int, ...] = (0,)) -> None:
    """``dialogue-gym COMMAND ENV_ID ARGUMENTS --quiet --save TARGET``, played by the code of HEAD in a
    temporary clean worktree (:func:`clean_worktree`), so the saved provenance says which committed
    revision made the numbers and that nothing else did."""
    if target.exists():
        target.unlink()  # a failed run must not leave the old file behind looking fresh
    with clean_worktree(("dialogue_gym", "envs_registry")) as (scratch, tree, environment):
        saved = scratch / "run.json"
        argv = [sys.executable, "-m", "dialogue_gym.cli", command, env_id, *arguments, "--quiet", "--save", str(saved)]
        done = subprocess.run(argv, cwd=tree, env=environment)
        if done.returncode not in exits:
            raise SystemExit(f"`dialogue-gym {command} {env_id}` exited {done.returncode}; nothing was saved.")
        provenance = provenance_of(saved)
        if provenance.get("git_dirty") is not False:
            raise SystemExit(f"the run in the clean worktree reports git_dirty={provenance.get('git_dirty')!r}; nothing was saved.")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(saved.read_bytes())


def run_training(name: str, arguments: list[str]) -> None:
    """``python -m trainers.TRAINER ARGUMENTS`` (``arguments`` = TRAINER, then its arguments) run by the code
    of HEAD in a clean worktree (:func:`clean_worktree`); the run folder's config, metrics and state files
    (not the per-episode records, checkpoints or trajectories) are kept in ``docs/results/training/NAME/``
    beside ``run.json``."""
    import json
    import shutil
    import time

    if not arguments or arguments[0] not in TRAINERS:
        raise SystemExit(f"--train {name} needs the trainer after --, one of {', '.join(TRAINERS)}, then its arguments; got {arguments[:1]}.")
    trainer, arguments = arguments[0], arguments[1:]
    if "--run-dir" in arguments or "--resume" in arguments:
        raise SystemExit("--train chooses the run folder itself (a scratch folder in the worktree); leave out --run-dir and --resume.")
    target = TRAINING / name
    if target.exists():
        shutil.rmtree(target)  # a failed run must not leave the old files behind looking fresh
    with clean_worktree(("dialogue_gym", "envs_registry", "trainers")) as (scratch, tree, environment):
        revision = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        run = scratch / "run"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", f"trainers.{trainer}", *arguments, "--run-dir", str(run)], cwd=tree, env=environment)
        if done.returncode:
            raise SystemExit(f"`python -m trainers.{trainer}` exited {done.returncode}; nothing was saved.")
        (target / "state").mkdir(parents=True)
        for path in [run / "config.json", run / "metrics.jsonl", *sorted((run / "state").glob("*.json"))]:
            if path.exists() and not path.name.endswith("_episodes.json"):
                shutil.copyfile(path, target / path.relative_to(run))
        made = {
            "trainer": trainer, "arguments": arguments, "revision": revision, "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - started, 1), "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 2),
        }
        (target / "run.json").write_text(json.dumps(made, indent=1) + "\n", encoding="utf-8")


def script_of(name: str) -> str:
    """The benchmark script a saved output ``NAME`` or ``NAME.LABEL`` comes from."""
    return name.partition(".")[0]


def run_benchmark(name: str, arguments: list[str]) -> None:
    script = ROOT / "benchmarks" / f"{script_of(name)}.py"
    if not script.exists():
        known = sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py"))
        raise SystemExit(f"no benchmark {name!r}; known: {known}.")
    done = subprocess.run([sys.executable, str(script), *arguments], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"benchmarks/{script.name} exited {done.returncode} (its output is above); nothing was saved.")
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    header = (
        f"$ python benchmarks/{script.name} {shlex.join(arguments)}".rstrip() + "\n"
        f"# {datetime.now(timezone.utc).date()}, revision {revision or 'unknown'}, {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}), load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    BENCHMARKS.mkdir(parents=True, exist_ok=True)
    (BENCHMARKS / f"{name}.txt").write_text(header + done.stdout, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 naming every stale block; write nothing")
    parser.add_argument("--eval", metavar="ENV_ID[.VARIANT]", help="save a fresh run of ENV_ID as docs/results/ENV_ID[.VARIANT].json (arguments after --) first")
    parser.add_argument("--benchmark", metavar="NAME", help="save a fresh output of benchmarks/NAME.py (arguments after --) first")
    parser.add_argument("--audit", metavar="ENV_ID", help="save a fresh audit of ENV_ID (arguments after --) first")
    parser.add_argument("--train", metavar="NAME", help="save a fresh training run as docs/results/training/NAME (the trainer and its arguments after --) first")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for line in found:
            print(f"stale: {line}", file=sys.stderr)
        if found:
            print("run `python tools/docs_tables.py` and commit the pages", file=sys.stderr)
        return 1 if found else 0
    if args.eval:
        run_eval(args.eval, extra)
    if args.benchmark:
        run_benchmark(args.benchmark, extra)
    if args.audit:
        run_audit(args.audit, extra)
    if args.train:
        run_training(args.train, extra)
    for page in write():
        print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
