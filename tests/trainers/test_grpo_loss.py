"""``grpo_loss`` against numbers computed by hand: both sides of the clip, the k3 KL's value and
direction, the learner-token mask with non-zero advantages everywhere, and the KL weight.

Each case is chosen so that a plausible wrong formula (no clip, a doubled epsilon, KL(new||ref)
instead of KL(ref||new), a KL subtracted instead of added, a mean over every position) gives a
different number.
"""

import math

import pytest

torch = pytest.importorskip("torch")

from trainers.grpo.lm import GRPOConfig, grpo_loss, token_logprobs  # noqa: E402


def one_token(new_p: float, old_p: float = 1.0, ref_p: float | None = None, advantage: float = 1.0):
    t = lambda p: torch.tensor([[math.log(p)]])  # noqa: E731
    return t(new_p), t(old_p), (t(ref_p) if ref_p is not None else None), torch.tensor([[advantage]]), torch.ones(1, 1)


@pytest.mark.parametrize(
    "ratio, advantage, expected",
    [
        (1.5, 1.0, -1.2),   # above 1 + eps with A > 0: clipped to 1.2 (no clip: -1.5; eps 0.4: -1.4)
        (1.5, -1.0, 1.5),   # above 1 + eps with A < 0: the unclipped, more pessimistic term (clipped would be 1.2)
        (0.5, 1.0, -0.5),   # below 1 - eps with A > 0: unclipped (clipped would be -0.8)
        (0.5, -1.0, 0.8),   # below 1 - eps with A < 0: clipped to 0.8 (no clip: 0.5; eps 0.4: 0.6)
        (1.1, 2.0, -2.2),   # inside the band: ratio x A
    ],
)
def test_the_surrogate_clips_on_both_sides(ratio, advantage, expected):
    new, old, _, advantages, mask = one_token(ratio * 0.4, 0.4, advantage=advantage)
    loss, stats = grpo_loss(new, old, None, advantages, mask, clip_eps=0.2, kl_coef=0.0)
    assert float(loss) == pytest.approx(expected, abs=1e-6)
    assert stats["loss/clip_fraction"] == (1.0 if abs(ratio - 1) > 0.2 else 0.0)
    assert stats["loss/ratio_mean"] == pytest.approx(ratio, abs=1e-6)


def test_the_k3_kl_is_to_the_reference_and_is_added():
    # new p = 0.5, reference p = 0.25: delta = log(ref) - log(new) = -log 2
    # k3 = exp(delta) - delta - 1 = 0.5 + log 2 - 1 = 0.19315 (the reversed direction gives 2 - log 2 - 1 = 0.30685)
    new, old, reference, advantages, mask = one_token(0.5, 0.5, 0.25, advantage=0.0)
    loss, stats = grpo_loss(new, old, reference, advantages, mask, clip_eps=0.2, kl_coef=0.1)
    k3 = 0.5 + math.log(2) - 1
    assert stats["loss/kl"] == pytest.approx(k3, abs=1e-6)
    assert float(loss) == pytest.approx(0.1 * k3, abs=1e-6)  # + kl_coef x KL: a penalty, never a bonus


def test_the_kl_term_grows_with_its_coefficient_and_vanishes_at_the_reference():
    new, old, reference, advantages, mask = one_token(0.5, 0.5, 0.25, advantage=1.0)
    losses = [float(grpo_loss(new, old, reference, advantages, mask, 0.2, c)[0]) for c in (0.0, 0.01, 0.1, 1.0)]
    assert losses == sorted(losses) and losses[0] == pytest.approx(-1.0, abs=1e-6)
    at_reference = grpo_loss(new, old, new.clone(), advantages, mask, 0.2, 1.0)
    assert float(at_reference[0]) == pytest.approx(-1.0, abs=1e-6) and at_reference[1]["loss/kl"] == pytest.approx(0.0, abs=1e-7)


def test_only_learner_tokens_count_even_where_every_advantage_is_non_zero():
    # four positions: prompt, learner, user (inside the sequence), learner; advantages all non-zero
    new = torch.log(torch.tensor([[0.9, 0.6, 0.1, 0.3]]))
    old = torch.log(torch.tensor([[0.3, 0.5, 0.5, 0.3]]))
    advantages = torch.tensor([[5.0, 1.0, -7.0, 2.0]])
    mask = torch.tensor([[0.0, 1.0, 0.0, 1.0]])
    loss, _ = grpo_loss(new, old, None, advantages, mask, clip_eps=0.2, kl_coef=0.0)
    # learner tokens: ratio 1.2 x A 1 -> -1.2; ratio 1.0 x A 2 -> -2.0; mean over the 2 learner tokens
    assert float(loss) == pytest.approx((-1.2 - 2.0) / 2, abs=1e-6)
    everything = grpo_loss(new, old, None, advantages, torch.ones(1, 4), 0.2, 0.0)[0]
    assert float(everything) != pytest.approx(float(loss))


def test_the_gradient_points_towards_advantaged_tokens_and_stops_at_the_clip():
    new = torch.log(torch.tensor([[0.5, 0.5]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.5, 0.25]]))  # ratios 1.0 (inside) and 2.0 (clipped)
    loss, _ = grpo_loss(new, old, None, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2), 0.2, 0.0)
    loss.backward()
    # d/d new of -(ratio x A)/2 at ratio 1 is -0.5; the clipped token gets no gradient
    assert new.grad[0].tolist() == pytest.approx([-0.5, 0.0], abs=1e-6)


def test_grpo_defaults_are_the_papers():
    """SPEC §1: lr 1e-6, KL 0.001 and rollout temperature 1.2 (SEAD's reference code)."""
    import dataclasses

    config = GRPOConfig()
    assert (config.learning_rate, config.kl_coef, config.clip_eps, config.max_grad_norm) == (1e-6, 0.001, 0.2, 1.0)
    assert (config.temperature, config.micro_batch_size, config.max_new_tokens, config.lora_rank) == (1.2, 8, 96, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.kl_coef = 0.0


def test_token_logprobs_score_the_next_token_of_the_temperature_scaled_distribution():
    class FixedLogits:
        def __call__(self, input_ids, attention_mask):
            # three-token vocabulary; position 0 favours token 1 (logit ln 3), position 1 favours token 0
            # (ln 4). Three tokens against two scored positions: a softmax over positions instead of the
            # vocabulary gives other numbers (3/4 instead of 3/5 at position 0).
            logits = [[0.0, math.log(3), 0.0], [math.log(4), 0.0, 0.0], [0.0, 0.0, 0.0]]
            return type("Out", (), {"logits": torch.tensor([logits])})()

    input_ids, attention = torch.tensor([[0, 1, 0]]), torch.ones(1, 3)
    cold = token_logprobs(FixedLogits(), input_ids, attention, 1.0)[0].tolist()
    assert cold == pytest.approx([math.log(3 / 5), math.log(4 / 6), 0.0], abs=1e-6)  # last position scores nothing
    hot = token_logprobs(FixedLogits(), input_ids, attention, 2.0)[0].tolist()
    # logits / 2: p(1) = sqrt 3 / (2 + sqrt 3) at position 0, p(0) = 2 / 4 at position 1
    assert hot == pytest.approx([math.log(math.sqrt(3) / (2 + math.sqrt(3))), math.log(2 / 4), 0.0], abs=1e-6)


def test_the_statistics_average_over_learner_tokens_only():
    new = torch.log(torch.tensor([[1.1, 3.0]]))
    old = torch.zeros(1, 2)
    _, stats = grpo_loss(new, old, None, torch.ones(1, 2), torch.tensor([[1.0, 0.0]]), 0.2, 0.0)
    assert stats["loss/ratio_mean"] == pytest.approx(1.1, abs=1e-6) and stats["loss/clip_fraction"] == 0.0
    _, stats = grpo_loss(new, old, None, torch.ones(1, 2), torch.ones(1, 2), 0.2, 0.0)
    assert stats["loss/ratio_mean"] == pytest.approx(2.05, abs=1e-6) and stats["loss/clip_fraction"] == 0.5


def test_the_kl_statistic_averages_over_learner_tokens_only():
    # new p = 0.5 everywhere; reference p = 0.25, 0.5, 0.125; the third position is not the learner's
    new = torch.log(torch.tensor([[0.5, 0.5, 0.5]]))
    reference = torch.log(torch.tensor([[0.25, 0.5, 0.125]]))
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    _, stats = grpo_loss(new, new.clone(), reference, torch.zeros(1, 3), mask, clip_eps=0.2, kl_coef=0.1)
    # k3 = exp(delta) - delta - 1 with delta = log(ref / new): 0.5 + log 2 - 1 at the first, 0 at the
    # second; the masked third (0.25 + log 4 - 1 = 0.636) is left out: mean over the 2 learner tokens
    assert stats["loss/kl"] == pytest.approx((0.5 + math.log(2) - 1 + 0.0) / 2, abs=1e-6)


def test_a_ratio_on_the_edge_of_the_band_is_not_clipped():
    # With clip_eps 0 the band is the single ratio 1: a token at exactly ratio 1 lies on its edge,
    # where the clamp changes nothing, so it is not counted as clipped; any other ratio is.
    new = torch.log(torch.tensor([[0.5, 0.6]]))
    old = torch.log(torch.tensor([[0.5, 0.5]]))
    loss, stats = grpo_loss(new, old, None, torch.ones(1, 2), torch.ones(1, 2), clip_eps=0.0, kl_coef=0.0)
    assert stats["loss/clip_fraction"] == 0.5
    assert float(loss) == pytest.approx(-(1.0 + 1.0) / 2, abs=1e-6)  # the second ratio 1.2 is clamped to 1
