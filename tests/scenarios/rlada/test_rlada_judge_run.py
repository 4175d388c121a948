"""The rule judge read turn by turn as the game plays (``JudgeRun``) gives the plain judge's verdict on
the finished call: on seeded calls of every scripted agent and customer, and on calls of random,
malformed and hostile agent moves (claims with wrong values, promises, invalid JSON, unknown tools,
failed calls, repeats, echoes, hang-ups)."""

import random

import pytest

from dialogue_gym.evaluation import Evaluator
from dialogue_gym.scenarios.rlada.agents import KeywordRouterAgent
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.judge import JudgeRun, RuleJudge
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act

DOMAIN = load_domain()
JUDGE = RuleJudge(DOMAIN)
ROUTER = KeywordRouterAgent(DOMAIN)


@pytest.mark.parametrize(
    ("env_id", "agent", "learner"),
    [
        ("RLADA-Banking-v0", "keyword", "agent"),
        ("RLADA-Banking-v0", "always_escalate", "agent"),
        ("RLADA-Banking-v0", "random", "agent"),
        ("RLADA-Banking-v0", "oracle", "agent"),
        ("RLADA-Banking-v1", "keyword", "agent"),
        ("RLADA-Customer-v0", "camouflage", "customer"),
        ("RLADA-Customer-v0", "contextual", "customer"),
        ("RLADA-Customer-v0", "vague", "customer"),
    ],
)
def test_seeded_calls_get_the_plain_judges_verdict(env_id, agent, learner):
    for trajectory in Evaluator(env_id, agent, learner=learner).run(40, seed=11):
        assert trajectory.meta["verdict"] == JUDGE.judge(trajectory).to_dict()


def _values(game, rng):
    """Amounts, ids and numbers the call holds, and some it does not."""
    bank = game.bank
    amounts = [game.facts["amount"], 12.5, 1000.0, 0.01] + [round(rng.uniform(1, 900), 2) for _ in range(2)]
    ids = [bank.customer_id, "DSP-123456", "HUM-000001", "ACC-999999"]
    return amounts, ids


def _random_move(game, rng, said):
    amounts, ids = _values(game, rng)
    amount, found = rng.choice(amounts), rng.choice(ids)
    tool = rng.choice([tool.name for tool in DOMAIN.tools] + ["no_such_tool"])
    args = {"account_id": rng.choice([game.bank.customer_id, "ACC-000000", 7]), "amount": amount, "reason": "duplicate", "days": 30}
    sentences = [
        f"I've opened a dispute for the ${amount:,.2f} charge, reference {found}.",
        f"I'll open a dispute for ${amount:,.2f} right away.",
        "I will transfer you to a specialist now.",
        f"Your balance is ${amount:,.2f}.",
        "Your card is now unblocked and active.",
        "Your card is currently blocked.",
        "I can open a dispute if you like.",
        "I will refund the charge.",
        f"I will refund ${amount:,.2f} today.",
        "I didn't refund anything.",
        "That has been resolved.",
        f"I moved ${amount:,.2f} to your savings.",
        "Could you tell me which charge this is about?",
        "What happened with the card?",
        "card card dispute refund transfer",
        "Blorf zinty quackle?",
        "?",
        "",
        "The status is posted.",
        f"The number is {rng.randint(0, 99999)}.",
    ]
    kind = rng.random()
    if kind < 0.3:
        return act("tool_call", tool, rng.choice([args, {}, {"account_id": game.bank.customer_id}, [1]]))
    if kind < 0.4:
        return rng.choice(['{"action_type": "speak"', "not json at all", '{"action_type": "dance", "content": "x"}', act("speak", "x" * 3000)])
    if kind < 0.5 and said:
        return act("speak", rng.choice(said))  # a repeat
    content = " ".join(rng.sample(sentences, rng.randint(1, 3)))
    return act("end_call" if kind > 0.93 else "speak", content)


def _customer_line(game, rng):
    amounts, ids = _values(game, rng)
    lines = [
        f"I was charged ${rng.choice(amounts):,.2f} twice at the diner, my account is {rng.choice(ids)}.",
        "Okay, thanks.",
        "Can you say that again?",
        "[hang up]",
        "",
        "My card ending 4321 was declined yesterday.",
        "I want my money back, it's 500 dollars.",
    ]
    return rng.choice(lines) if rng.random() < 0.9 else rng.choice(lines[:3]) * 30


@pytest.mark.parametrize("seed", range(6))
def test_random_malformed_and_hostile_calls_get_the_plain_judges_verdict(seed):
    rng = random.Random(seed)
    checked = 0
    for episode in range(40):
        game = RladaGame()
        intent = rng.choice(DOMAIN.intents).name
        game.reset(seed=episode, options={"intent": intent, "concealment": rng.choice(["direct", "vague", "camouflage"])})
        said, memory, scripted = [], {"seed": episode}, rng.random()
        while not game.done:
            if game.current_role == "customer":
                game.step(_customer_line(game, rng))
                continue
            # the keyword router's moves (lookups, routed calls, explanations) between random ones
            move = None
            if rng.random() < scripted:
                try:
                    move = ROUTER.act(game.observe("agent"), game.info("agent"), memory)
                except (AttributeError, KeyError, TypeError):  # it reads tool messages of its own calls only
                    pass
            if move is None:
                move = _random_move(game, rng, said)
            said.append(move)
            game.step(move)
        trajectory = game.trajectory()
        assert game.verdict == JUDGE.judge(trajectory, game._shown_results) == JUDGE.judge(trajectory)
        checked += 1
    assert checked == 40


def test_a_judge_swapped_in_after_the_reset_reads_the_finished_call():
    """The running reading belongs to the judge the call started with: a judge set since judges the call itself."""
    weighted = RuleJudge(DOMAIN, {"routing": 2.0, "lookup_first": 0.0, "procedure": 0.0, "clean_ending": 0.0, "consistency": 0.0})
    game = RladaGame()
    game.reset(seed=4, options={"intent": "transaction_charged_twice", "concealment": "direct"})
    game.judge = weighted
    game.step("I was charged twice at the diner.")
    game.step(act("tool_call", "dispute_charge", {"account_id": game.bank.customer_id, "amount": 5.0, "reason": "duplicate"}))
    game.step(act("end_call", "Goodbye."))
    assert game.verdict == weighted.judge(game.trajectory()) and game.verdict.score == 2.0


def test_a_run_fed_a_hand_made_call_equals_the_plain_judge():
    """Turns the game never writes (a spoken turn that also holds a tool call) are read as the plain judge reads them."""
    from dialogue_gym.types import Outcome, Trajectory, Turn

    record = {"tool": "lookup_account", "args": {"account_id": "ACC-000001"}, "schema_ok": True, "ok": True,
              "result": {"accounts": [{"balance": 12.5, "account_id": "CHK-000001"}], "status": "verified"}, "error": None}
    turns = [
        Turn("customer", "hi", "hi", {}),
        Turn("agent", "x", "x", {"action_type": "speak", "content": "Your balance is $12.50, verified.", "tool_outcome": record}),
        Turn("agent", "y", "y", {"action_type": "speak", "content": "Your balance is $12.50, verified."}),
        Turn("agent", "z", "z", {"action_type": "end_call", "content": "Goodbye."}),
    ]
    trajectory = Trajectory(scenario="RLADA-Banking-v0", seed=0, profile={"tool": "lookup_account"}, turns=turns, outcome=Outcome.SUCCESS)
    run = JudgeRun(JUDGE)
    for turn in turns:
        run.add(turn)
    assert run.verdict(trajectory) == JUDGE.judge(trajectory)
    assert run.verdict(trajectory).explained
