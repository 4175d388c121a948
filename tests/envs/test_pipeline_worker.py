"""The pipeline's one act worker: batches generate one at a time in submission order (as on one GPU),
and closing the generator early waits for the batch in flight before it returns."""

import threading
import time

import gymnasium as gym

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.pipeline import pipelined_steps

SOP_LINE = "<response>Hello, this is your payment provider.</response><cooperation_score>2</cooperation_score><emotion_score>2</emotion_score><trust_score>2</trust_score>"


class CountingAct:
    """An act that holds each call for ``hold`` seconds and counts calls in flight at once."""

    def __init__(self, hold: float):
        self.hold, self.lock = hold, threading.Lock()
        self.in_flight = self.most_at_once = self.started = self.finished = 0

    def __call__(self, observations):
        with self.lock:
            self.started += 1
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        time.sleep(self.hold)
        with self.lock:
            self.in_flight -= 1
            self.finished += 1
        return [SOP_LINE] * len(observations["messages"])


def test_group_batches_never_generate_at_once():
    # Both groups' first batches are submitted before either is stepped: with a second worker they would
    # overlap for the whole 50 ms hold.
    act = CountingAct(hold=0.05)
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=4)
    steps = list(pipelined_steps(envs, act, 3, groups=2, seed=0))
    assert len(steps) == 6 and act.started == act.finished == 6
    assert act.most_at_once == 1


def test_closing_early_waits_for_the_batch_in_flight():
    act = CountingAct(hold=0.5)
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=4)
    steps = pipelined_steps(envs, act, 5, groups=2, seed=0)
    # Group 0 stepped once: group 1's first batch is generating (it holds 0.5 s), group 0's second is queued.
    next(steps)
    steps.close()
    # The call in flight has finished by the time close returns, and the queued one was cancelled, not run.
    assert act.in_flight == 0 and act.started == act.finished == 2
