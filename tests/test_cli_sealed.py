"""``dialogue-gym eval`` and ``audit`` with ``--sealed`` / ``--unseal`` (issue 32, items 3 and 6)."""

from __future__ import annotations

import json
import re

import envs_registry
from dialogue_gym.audit import AuditPolicy, ScenarioAudit, TextPolicy
from dialogue_gym.cli import main


def secret_printed(out: str) -> str:
    return re.search(r"its secret: ([0-9a-f]{32}) \(`--unseal \1` plays the same episodes\)", out).group(1)


def test_a_sealed_eval_saves_its_secret_and_unseal_reproduces_it(tmp_path, capsys):
    first, again, other = (tmp_path / f"{name}.json" for name in ("first", "again", "other"))
    command = ["eval", "SEAD-Outbound-v0", "--agent", "sop,adaptive", "--episodes", "12", "--quiet", "--bootstrap", "0"]
    assert main([*command, "--sealed", "--save", str(first)]) == 0
    out = capsys.readouterr().out
    assert "12 episodes per agent, sealed (seeds from a secret printed when the run ends)" in out
    saved = json.loads(first.read_text())
    assert saved["provenance"]["sealed"] is True and saved["provenance"]["seed"] is None
    assert saved["provenance"]["secret"] == secret_printed(out)
    assert main([*command, "--unseal", saved["provenance"]["secret"], "--save", str(again)]) == 0
    assert json.loads(again.read_text())["episodes"] == saved["episodes"]
    assert main([*command, "--sealed", "--save", str(other)]) == 0
    assert json.loads(other.read_text())["episodes"] != saved["episodes"]
    capsys.readouterr()
    assert main(["compare", str(first), str(other), "--agent-a", "sop", "--agent-b", "sop"]) == 2
    assert "Cannot compare runs that played different episodes (secret: " in capsys.readouterr().err


def test_an_open_eval_says_it_is_open_book_and_saves_its_seed(tmp_path, capsys):
    saved = tmp_path / "open.json"
    assert main(["eval", "SEAD-Outbound-v0", "--episodes", "4", "--seed", "2", "--quiet", "--bootstrap", "0", "--save", str(saved)]) == 0
    assert "seed 2 (open-book: reproducible from the seed; publish sealed runs, --sealed)" in capsys.readouterr().out
    provenance = json.loads(saved.read_text())["provenance"]
    assert (provenance["seed"], provenance["sealed"], provenance["secret"]) == (2, False, None)


def test_malformed_or_conflicting_sealing_flags_are_one_line_errors(capsys):
    assert main(["eval", "SEAD-Outbound-v0", "--unseal", "0x12", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unseal (--unseal) needs the secret of a sealed run: 32 hexadecimal digits, got '0x12'" in err
    assert "provenance['secret']" in err
    assert main(["eval", "SEAD-Outbound-v0", "--sealed", "--seed", "5", "--quiet"]) == 2
    assert "seed=5 (--seed) has no effect on a sealed run" in capsys.readouterr().err


def test_a_sealed_audit_prints_its_secret_and_unseal_plays_it_again(monkeypatch, capsys):
    silent = AuditPolicy("silent", "degenerate", "says nothing", lambda: TextPolicy(lambda o, t, r: "", str))
    audits = lambda: [ScenarioAudit("SEAD-Outbound-v0", "agent", "cr", "rate", "sop", ("random", "sop"), (silent,))]  # noqa: E731
    monkeypatch.setattr("dialogue_gym.cli.resolve", lambda target: audits if target.endswith(":audits") else envs_registry.resolve(target))
    assert main(["audit", "SEAD-Outbound-v0", "--episodes", "24", "--quiet", "--sealed"]) == 0
    out = capsys.readouterr().out
    assert "SEAD-Outbound-v0: sealed" in out
    assert main(["audit", "SEAD-Outbound-v0", "--episodes", "24", "--quiet", "--unseal", secret_printed(out)]) == 0
    again = capsys.readouterr().out
    table = lambda text: text[text.index("|"):text.index("every bound")]  # noqa: E731
    assert table(again) == table(out)


def test_sealed_tracer_runs_say_their_references_are_public_unless_a_private_file_is_given(tmp_path, capsys):
    from dialogue_gym.scenarios.tracer.synthetic import generate, write

    saved = tmp_path / "tracer.json"
    assert main(["eval", "TRACER-UserSim-v0", "--episodes", "4", "--sealed", "--quiet", "--bootstrap", "0", "--save", str(saved)]) == 0
    assert "note: sealed, but the reference sessions are the public sample" in capsys.readouterr().out
    assert "sealing hides seeds, not public data" in json.loads(saved.read_text())["provenance"]["public_targets"]
    private = tmp_path / "private.jsonl"
    write(generate(groups=4, per_group=3, seed=5), private)
    kwargs = json.dumps({"sessions_file": str(private)})
    main(["audit", "TRACER-UserSim-v0", "--episodes", "12", "--unseal", "ab" * 16, "--quiet", "--env-kwargs", kwargs])  # 12 episodes: bounds not meant to hold
    out = capsys.readouterr().out
    assert "public sample" not in out and re.search(r"\| fingerprint_match \| probe +\| [0-9.]+ +\| [0-9.]+ +\| yes", out)
