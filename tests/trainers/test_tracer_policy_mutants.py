"""TRACER's strategy policy optimiser worked by hand (issue 43 item 6, trainers/tracer/policy.py):
Adam's bias-corrected ascent over two steps, and its state saved and restored mid-run."""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from trainers.tracer.policy import Adam


def test_two_adam_steps_by_hand():
    weights = np.zeros(2)
    adam = Adam((2,), learning_rate=0.1)
    adam.step(weights, np.array([0.5, -2.0]))
    # step 1: m_hat = g, v_hat = g^2, so each weight moves lr * sign(g) (up to eps)
    assert weights == pytest.approx([0.1, -0.1], abs=1e-7)
    adam.step(weights, np.array([0.5, 0.0]))
    # step 2: m = 0.9 m + 0.1 g = (0.095, -0.18), v = 0.999 v + 0.001 g^2 = (0.00049975, 0.003996);
    # m_hat = m / 0.19 = (0.5, -0.947368), v_hat = v / 0.001999 = (0.25, 1.998999): moves (0.1, -0.067006)
    assert weights == pytest.approx([0.2, -0.1 - 0.067006], abs=1e-6)
    assert adam.t == 2


def test_a_restored_adam_continues_as_if_never_stopped():
    gradients = [np.array([0.3, -1.0]), np.array([-0.2, 0.4]), np.array([1.0, 1.0])]
    straight, weights = Adam((2,), learning_rate=0.05), np.zeros(2)
    for gradient in gradients:
        straight.step(weights, gradient)
    first, resumed = Adam((2,), learning_rate=0.05), np.zeros(2)
    first.step(resumed, gradients[0])
    second = Adam((2,), learning_rate=0.05)
    second.load_state_dict(first.state_dict())
    for gradient in gradients[1:]:
        second.step(resumed, gradient)
    assert resumed == pytest.approx(weights, abs=1e-12) and second.t == 3
    with pytest.raises(ConfigError, match="learning_rate must be > 0, got -1"):
        Adam((2,), learning_rate=-1)


def test_adams_epsilon_matters_only_for_tiny_gradients():
    weights = np.zeros(1)
    Adam((1,), learning_rate=0.1).step(weights, np.array([1e-8]))
    # m_hat = 1e-8, sqrt(v_hat) = 1e-8: the step is 0.1 * 1e-8 / (1e-8 + eps) = 0.05 with the default eps 1e-8
    assert weights == pytest.approx([0.05], rel=1e-9)


def test_the_log_likelihood_gradient_and_one_update_by_hand(tmp_path):
    from trainers.tracer.policy import LEVELS, IntentPolicy

    policy = IntentPolicy(learning_rate=0.1)
    features, levels = policy.weights.shape
    assert levels == LEVELS == 6
    x = np.zeros((2, features))
    x[0, 0], x[1, 3] = 1.0, 0.5
    # zero weights: p = 1/6 for every level; row n adds x_n^T (onehot(level_n) - 1/6) * weight_n
    gradient = policy.log_likelihood_gradient(x, np.array([2, 5]), np.array([2.0, -1.0]))
    expected = np.zeros((features, levels))
    expected[0] = 2.0 * (np.eye(6)[2] - 1 / 6)
    expected[3] = 0.5 * -1.0 * (np.eye(6)[5] - 1 / 6)
    assert gradient == pytest.approx(expected)
    # update: the same two decisions in two episodes, the gradient averaged over the episodes; Adam's first step is lr * sign
    records = [{"steps": [[[0], [1.0], 2]]}, {"steps": [[[3], [0.5], 5]]}]
    stats = policy.update(records, [[2.0], [-1.0]])
    assert stats["loss/policy_gradient_norm"] == pytest.approx(np.linalg.norm(expected / 2))
    assert stats["policy/entropy"] == pytest.approx(np.log(6))
    assert policy.weights == pytest.approx(0.1 * np.sign(expected), abs=1e-6)
    with pytest.raises(ConfigError, match="got 1 turn advantages for 2 recorded decisions"):
        policy.update(records, [[1.0], []])
    policy.save(tmp_path / "a" / "b")
    policy.save(tmp_path / "a" / "b")  # saving again over a checkpoint is allowed
    loaded = IntentPolicy.load(tmp_path / "a" / "b")
    assert (loaded.weights == policy.weights).all() and loaded.optimizer.t == 1 and loaded.optimizer.learning_rate == 0.1


def test_fit_steps_on_every_sample_and_reports_the_nll():
    from trainers.tracer.policy import IntentPolicy

    policy = IntentPolicy()
    x = np.zeros((1, policy.weights.shape[0]))
    x[0, 0] = 1.0
    stats = policy.fit(x, np.array([2]), epochs=1, learning_rate=0.1)
    # one sample, one Adam step of lr * sign(onehot(2) - 1/6) on feature 0's row
    assert policy.weights[0] == pytest.approx([-0.1, -0.1, 0.1, -0.1, -0.1, -0.1], abs=1e-6)
    # p(level 2) = e^0.1 / (e^0.1 + 5 e^-0.1) = 0.196323
    assert stats == pytest.approx({"sft/nll": 1.627995, "sft/samples": 1.0}, abs=1e-5)
