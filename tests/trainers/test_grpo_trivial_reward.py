"""The trivial-reward check of issue 41 (item 2): does decision-point GRPO, at the learning rate and
step count chosen, move the *greedy* policy?

The reward is 1 when the sampled turn is one given sentence (B) and 0 otherwise, so every group with a
B in it carries signal and nothing else does. The model is the scratch shape at 2 layers (SCRATCH_MODEL,
hidden 128, whole-sentence tokenizer), first cloned (plain cross-entropy) to say sentence A at every
decision point and B one time in ten, as an SFT checkpoint says its expert's line and rarely another:
greedy says A everywhere and B is sampled ~10% of the time. The real decision-point loop
(draw_points, play_groups with adaptive finishing each copy, group_samples, CausalLMPolicy.step) then
runs RL_ITERATIONS iterations. At RL_LEARNING_RATE greedy must say B at every point; at the preset's
old 1e-5 the same iterations from the same start must leave greedy on A everywhere."""

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.backends.tiny import build_tiny_chat_model
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.integrations.datasets import build_rows
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy
from trainers.common.play import play_games
from trainers.grpo.decision_point import (
    DecisionPointSeat,
    draw_points,
    group_samples,
    play_groups,
)
from trainers.grpo.lm import CausalLMPolicy, GRPOConfig
from trainers.sead.config import PRESETS, SCRATCH_MODEL

A = "Could I tell you a little more about the listing?"
B = "Thank you for your time, have a great day."
POINTS, GROUP = 4, 8
RL_ITERATIONS = 6
"""Iterations of the check; with the preset's learning rate greedy says B at every point by then."""
RL_LEARNING_RATE = PRESETS["cpu-lm-scratch"]["learning_rate"]
OLD_LEARNING_RATE = 1e-5
"""cpu-lm-scratch's RL rate before issue 41: the same iterations leave greedy where it was."""


def sead_pool(games):
    pool = [SeadGame(SeadConfig(max_agent_turns=4)) for _ in range(games)]
    library = pool[0].library
    return (
        pool,
        make_policy("agent", "adaptive", library),
        make_policy("user", "scripted", library),
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    games, expert, user = sead_pool(POINTS * GROUP)
    starts = [(seed, {}) for seed in range(POINTS)]
    played = []
    play_games(
        games[:POINTS],
        CounterpartDriver({"agent": expert, "user": user}, learner=None),
        starts,
        lambda index, trajectory, memories: played.append(trajectory),
    )
    # The tokenizer learns the chats' text (system prompt included), as the preset's scratch model does.
    texts = [
        message["content"]
        for row in build_rows(played, "sft", {"max_agent_turns": 4})
        for message in row["messages"]
    ]
    folder = build_tiny_chat_model(
        tmp_path_factory.mktemp("scratch"),
        seed=0,
        corpus=texts + [A, B] * 4,
        **{**SCRATCH_MODEL, "num_hidden_layers": 2},
    )
    points = draw_points(
        games, {"agent": expert, "user": user}, "agent", starts, random.Random(0)
    )
    policy = new_policy(folder, OLD_LEARNING_RATE)
    a_ids, b_ids = turn_ids(policy, A), turn_ids(policy, B)
    prompts = point_prompts(policy, games, expert, user, points)
    assert len({tuple(p) for p in prompts}) == POINTS, (
        "the points should be different states"
    )
    clone(policy, prompts, a_ids, b_ids)
    policy.model.save_pretrained(folder / "cloned")
    policy.tokenizer.save_pretrained(folder / "cloned")
    return folder / "cloned", games, expert, user, points, prompts, a_ids, b_ids


def new_policy(folder, learning_rate):
    torch.manual_seed(0)
    return CausalLMPolicy(
        str(folder),
        GRPOConfig(
            learning_rate=learning_rate, kl_coef=0.0, temperature=1.0, max_new_tokens=4
        ),
    )


def turn_ids(policy, text):
    ids = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1, f"{text!r} should be one whole-sentence token, got {len(ids)}"
    return [ids[0], policy.tokenizer.eos_token_id]


def point_prompts(policy, games, expert, user, points):
    """The prompt ids the LM sees at each point (one copy per point, as play_groups builds them)."""
    trajectories = play_groups(
        games,
        DecisionPointSeat(policy, expert),
        {"user": user},
        "agent",
        points,
        1,
        seed=0,
    )
    return [
        trajectory.meta["learner_record"]["prompt_ids"] for trajectory in trajectories
    ]


def turn_logprob(model, prompt, completion):
    """log p(completion | prompt) and whether greedy decoding would say exactly ``completion`` (every
    position's most likely token is the completion's)."""
    ids = torch.tensor([prompt + completion])
    logits = torch.log_softmax(
        model(ids).logits[0, len(prompt) - 1 : -1].float(), dim=-1
    )
    target = torch.tensor(completion)
    return logits.gather(1, target[:, None]).sum(), bool(
        (logits.argmax(-1) == target).all()
    )


def sequence_logprobs(model, prompts, completion):
    """log p(completion | prompt) for every prompt, in one right-padded forward pass."""
    rows = [prompt + completion for prompt in prompts]
    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    attention = torch.tensor(
        [[1] * len(row) + [0] * (width - len(row)) for row in rows]
    )
    logits = torch.log_softmax(
        model(input_ids=ids, attention_mask=attention).logits.float(), dim=-1
    )
    target = torch.tensor(completion)
    return torch.stack(
        [
            logits[r, len(p) - 1 : len(p) - 1 + len(completion)]
            .gather(1, target[:, None])
            .sum()
            for r, p in enumerate(prompts)
        ]
    )


def clone(policy, prompts, a_ids, b_ids, steps=40):
    """Behaviour cloning stand-in: cross-entropy towards A (weight 0.9) and B (0.1) at every point."""
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=1e-2)
    policy.model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -(
            0.9 * sequence_logprobs(policy.model, prompts, a_ids)
            + 0.1 * sequence_logprobs(policy.model, prompts, b_ids)
        ).mean()
        loss.backward()
        optimizer.step()
    policy.model.eval()


@torch.no_grad()
def greedy_and_share(policy, prompts, a_ids, b_ids):
    """(points where greedy says A, points where greedy says B, mean probability of sampling B)."""
    says_a = says_b = 0
    share = 0.0
    for prompt in prompts:
        _, greedy_a = turn_logprob(policy.model, prompt, a_ids)
        logprob_b, greedy_b = turn_logprob(policy.model, prompt, b_ids)
        says_a, says_b, share = (
            says_a + greedy_a,
            says_b + greedy_b,
            share + float(logprob_b.exp()) / len(prompts),
        )
    return says_a, says_b, share


def grpo_on_trivial_reward(policy, games, expert, user, points, b_ids, iterations):
    """The decision-point loop with reward 1 iff the sampled turn is B; returns each iteration's share of B samples."""
    shares = []
    for iteration in range(iterations):
        trajectories = play_groups(
            games,
            DecisionPointSeat(policy, expert),
            {"user": user},
            "agent",
            points,
            GROUP,
            seed=1000 + iteration,
        )
        for trajectory in trajectories:
            trajectory.rewards = {
                **trajectory.rewards,
                "agent": float(
                    trajectory.meta["learner_record"]["completion_ids"] == b_ids
                ),
            }
        samples, stats = group_samples(trajectories, GROUP, "agent")
        shares.append(stats["decision/mean_reward"])
        policy.step(samples)
    return shares


def test_the_preset_learning_rate_moves_the_greedy_policy_to_the_rewarded_sentence(
    setup,
):
    folder, games, expert, user, points, prompts, a_ids, b_ids = setup
    policy = new_policy(folder, RL_LEARNING_RATE)
    says_a, says_b, share = greedy_and_share(policy, prompts, a_ids, b_ids)
    assert (says_a, says_b) == (POINTS, 0) and 0.03 < share < 0.3, (
        says_a,
        says_b,
        share,
    )  # like an SFT checkpoint
    shares = grpo_on_trivial_reward(
        policy, games, expert, user, points, b_ids, RL_ITERATIONS
    )
    says_a, says_b, share = greedy_and_share(policy, prompts, a_ids, b_ids)
    assert says_b == POINTS, (
        f"greedy says B at {says_b}/{POINTS} points after {RL_ITERATIONS} iterations; sampled B shares {shares}"
    )
    assert share > 0.5 and shares[-1] > shares[0]


def test_the_old_learning_rate_leaves_the_greedy_policy_where_it_was(setup):
    folder, games, expert, user, points, prompts, a_ids, b_ids = setup
    policy = new_policy(folder, OLD_LEARNING_RATE)
    _, _, before = greedy_and_share(policy, prompts, a_ids, b_ids)
    grpo_on_trivial_reward(policy, games, expert, user, points, b_ids, RL_ITERATIONS)
    says_a, says_b, after = greedy_and_share(policy, prompts, a_ids, b_ids)
    assert (says_a, says_b) == (POINTS, 0), (says_a, says_b)
    assert after < 0.3 and after - before < 0.1, (before, after)
