"""benchmarks/floor_ratio.py's report: each driver's CPU is divided by the floor's sample of
the same pair before the median is taken, and the 1.3x verdict reads asyncmongo's median."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest


@pytest.fixture
def floor_ratio(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module; the benchmarks folder it puts on sys.path is taken off after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    from benchmarks import floor_ratio

    return floor_ratio


def test_ratios_are_paired_before_the_median(
    floor_ratio: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        (
            "find one by _id",
            {
                # the second pair ran while the machine was twice as slow: pairing cancels it
                "floor": [10.0, 20.0, 10.0, 10.0],
                "asyncmongo": [12.0, 26.0, 14.0, 12.0],
                "pymongo": [60.0, 100.0, 50.0, 40.0],
            },
        )
    ]
    floor_ratio.report(rows, "replay server, asyncio loop")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "replay server, asyncio loop"
    assert "PyMongo / floor" in lines[2]
    # asyncmongo: ratios 1.2, 1.3, 1.4, 1.2 (median 1.25); PyMongo: 6, 5, 5, 4 (median 5)
    assert lines[4] == (
        "| find one by _id | 10.0 | 13.0 | 1.25x | 1.20x .. 1.37x | 55.0 | 5.00x | met |"
    )


def test_a_run_without_pymongo_has_no_pymongo_columns(
    floor_ratio: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [("run command", {"floor": [10.0, 10.0, 10.0], "asyncmongo": [14.0, 15.0, 16.0]})]
    floor_ratio.report(rows, "t")
    lines = capsys.readouterr().out.splitlines()
    assert "PyMongo" not in lines[2]
    assert lines[4] == "| run command | 10.0 | 15.0 | 1.50x | 1.40x .. 1.60x | MISS |"
