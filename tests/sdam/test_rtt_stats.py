"""RTT statistics: EWMA with alpha 0.2 and the minimum over the last 10 samples."""

from __future__ import annotations

import pytest

from asyncmongo.core.sdam.rtt import RttStats, moving_average


def test_first_sample_is_taken_as_is() -> None:
    assert moving_average(None, 7.0) == 7.0
    assert RttStats().add(7.0).average == 7.0


def test_moving_average_weights_new_samples_by_a_fifth() -> None:
    assert RttStats(average=10.0).add(20.0).average == pytest.approx(12.0)


def test_minimum_needs_two_samples() -> None:
    stats = RttStats().add(5.0)
    assert stats.minimum == 0.0
    assert stats.add(8.0).minimum == 5.0


def test_minimum_covers_only_the_last_ten_samples() -> None:
    stats = RttStats().add(1.0)
    for _ in range(10):
        stats = stats.add(9.0)
    assert len(stats.samples) == 10
    assert stats.minimum == 9.0


def test_reset_and_values_are_immutable() -> None:
    stats = RttStats().add(3.0)
    assert stats.add(4.0) is not stats
    assert stats.samples == (3.0,)
    assert stats.reset() == RttStats()
    assert "avg 3.000ms" in repr(stats)
