"""``dialogue-gym eval`` on the RL-ADA ids: the registry plugs in the baselines, the summary and the report."""

from dialogue_gym.cli import main


def test_eval_banking_baselines(capsys):
    assert main(["eval", "RLADA-Banking-v0", "--agent", "keyword,always_escalate,random", "--episodes", "78", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| keyword " in printed and "| always_escalate " in printed and "PASS lo95" in printed
    assert "Routing accuracy per intent tool, and per concealment level" in printed
    row = next(line for line in printed.splitlines() if line.startswith("| always_escalate"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"{38 / 78:.3f}"  # routing = the 38 human intents out of 78: the escalation imbalance


def test_eval_customers_against_the_keyword_router(capsys):
    assert main(["eval", "RLADA-Customer-v0", "--agent", "direct,camouflage", "--episodes", "40", "--env-kwargs", '{"scenario_set": "arena"}', "--quiet"]) == 0
    printed = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in printed.splitlines() if line.startswith("| direct") or line.startswith("| camouflage")}
    assert float(rows["camouflage"][2]) < float(rows["direct"][2])  # camouflage lowers the router's strict PASS
    assert main(["eval", "RLADA-Customer-v0", "--agent", "mumbler", "--episodes", "2", "--quiet"]) == 2
    assert "customer='mumbler' is not a known customer policy" in capsys.readouterr().err
