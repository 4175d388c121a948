"""``Evaluator.run`` freezes what it keeps out of the cyclic GC's full collections while it runs, and
hands everything back when it ends (however it ends), leaving alone a GC that others froze or disabled."""

import gc
import weakref

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym import evaluation
from dialogue_gym.evaluation import evaluate, kept_out_of_gc


class Cycle:
    def __init__(self):
        self.me = self


@pytest.fixture
def freeze_every_4(monkeypatch):
    monkeypatch.setattr(evaluation, "FREEZE_EVERY", 4)
    assert gc.get_freeze_count() == 0


def test_a_run_freezes_as_episodes_finish_and_unfreezes_at_the_end(freeze_every_4):
    seen = []
    evaluate("SEAD-Outbound-v0", "sop", 10, on_episode=lambda trajectory: seen.append(gc.get_freeze_count()))
    assert seen[0] == 0 and seen[-1] > 0  # nothing frozen before the 4th episode ended, objects frozen after the 8th
    assert gc.get_freeze_count() == 0


def test_an_interrupted_run_unfreezes(freeze_every_4):
    released = []

    def stop(trajectory):
        released.append(trajectory)
        if len(released) == 7:  # after the first freeze
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate("SEAD-Outbound-v0", "sop", 10, on_episode=stop)
    assert gc.get_freeze_count() == 0


def test_garbage_made_during_a_run_is_still_collected(freeze_every_4):
    cycles = []
    evaluate("SEAD-Outbound-v0", "sop", 10, on_episode=lambda trajectory: cycles.append(weakref.ref(Cycle())))
    gc.collect()
    assert len(cycles) == 10 and all(ref() is None for ref in cycles)


def test_a_freeze_made_by_other_code_is_left_alone(freeze_every_4):
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        evaluate("SEAD-Outbound-v0", "sop", 10)
        # still frozen, and nothing added (frozen objects that die leave the count, so it may fall)
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_a_disabled_gc_is_left_disabled_and_nothing_frozen(freeze_every_4):
    gc.disable()
    try:
        seen = []
        evaluate("SEAD-Outbound-v0", "sop", 10, on_episode=lambda trajectory: seen.append(gc.get_freeze_count()))
        assert seen == [0] * 10 and not gc.isenabled()
    finally:
        gc.enable()


def test_only_one_block_freezes_at_a_time():
    with kept_out_of_gc() as outer:
        with kept_out_of_gc() as inner:
            inner()
            assert gc.get_freeze_count() == 0
        outer()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    with kept_out_of_gc() as again:  # the lock was released
        again()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_young_garbage_is_collected_before_a_freeze_not_frozen_with_the_rest():
    with kept_out_of_gc() as freeze:
        cycle = weakref.ref(Cycle())
        freeze()
        assert cycle() is None


@pytest.fixture
def known_thresholds():
    """Thresholds unlike Python's defaults (whose older two are equal), put back afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 11, 13)
    yield (700, 11, 13)
    gc.set_threshold(*saved)


def test_a_run_raises_the_young_threshold_and_puts_the_thresholds_back(known_thresholds):
    seen = []
    evaluate("SEAD-Outbound-v0", "sop", 3, on_episode=lambda trajectory: seen.append(gc.get_threshold()))
    assert seen == [(evaluation.YOUNG_THRESHOLD, 11, 13)] * 3
    assert gc.get_threshold() == known_thresholds


def test_an_interrupted_run_puts_the_thresholds_back(known_thresholds):
    def stop(trajectory):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate("SEAD-Outbound-v0", "sop", 3, on_episode=stop)
    assert gc.get_threshold() == known_thresholds


def test_a_higher_young_threshold_set_by_others_is_kept(known_thresholds):
    gc.set_threshold(evaluation.YOUNG_THRESHOLD * 2, 11, 13)
    with kept_out_of_gc():
        assert gc.get_threshold() == (evaluation.YOUNG_THRESHOLD * 2, 11, 13)
    assert gc.get_threshold() == (evaluation.YOUNG_THRESHOLD * 2, 11, 13)


def test_a_disabled_gc_keeps_its_thresholds(known_thresholds):
    gc.disable()
    try:
        with kept_out_of_gc():
            assert gc.get_threshold() == known_thresholds
    finally:
        gc.enable()
