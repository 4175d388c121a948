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
