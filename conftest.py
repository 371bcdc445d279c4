"""Test-wide settings: the event loops async tests run on.

The runtime's tests (connections, pools, the topology, sessions) run twice in every test run,
on asyncio's default loop and on uvloop, so each has an ``[asyncio]`` and a ``[uvloop]`` id:
the runtime must behave the same on both (issue #8). Every other async test runs on asyncio's
loop. ``ASYNCMONGO_TEST_LOOP=uvloop`` runs every async test on uvloop only (tox -e uvloop).
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import uvloop

from asyncmongo.bson import codec

LoopFactory = Callable[[], asyncio.AbstractEventLoop]

ROOT = Path(__file__).resolve().parent
RUNTIME_TESTS = tuple(
    ROOT / "tests" / name for name in ("connection", "pool", "topology", "sessions")
)
BOTH_LOOPS: Mapping[str, LoopFactory] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    if os.environ.get("ASYNCMONGO_TEST_LOOP") == "uvloop":
        return {"uvloop": uvloop.new_event_loop}
    path = Path(str(item.path))
    if any(path.is_relative_to(folder) for folder in RUNTIME_TESTS):
        return BOTH_LOOPS
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture(params=codec.available_implementations())
def bson_impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a BSON test once per codec implementation this install has (``python``, ``c``).

    ``ASYNCMONGO_REQUIRE_EXTENSIONS=1`` (set by .ci/run) turns a missing accelerator into a
    failure instead of a shorter parameter list.
    """
    before = codec.implementation()
    codec.use_implementation(request.param)
    try:
        yield request.param
    finally:
        codec.use_implementation(before)


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("ASYNCMONGO_REQUIRE_EXTENSIONS") and "c" not in (
        codec.available_implementations()
    ):
        raise pytest.UsageError(
            "ASYNCMONGO_REQUIRE_EXTENSIONS is set but the BSON C accelerators are not built"
        )


class _GcPauses:
    """The garbage collector's longest pauses while tests ran, with the test each stopped,
    for the run's summary: a spec test that fails with a timeout shorter than it says
    whether the collector did it."""

    def __init__(self) -> None:
        #: test node id -> its longest pause, in seconds
        self.longest: dict[str, float] = {}
        self.test = "between tests"  # the running test's node id
        self.counting = False  # from the end of collection
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.counting:
            pause = time.perf_counter() - self._started
            if pause > self.longest.get(self.test, 0.0):
                self.longest[self.test] = pause

    def summary(self, count: int) -> str:
        """The ``count`` longest pauses of 10 ms or more, with their tests. Counting stops
        first: a collection while this sorts would add to the dict it iterates."""
        self.counting = False
        worst = sorted(self.longest.items(), key=lambda item: item[1], reverse=True)[:count]
        return "; ".join(
            f"{pause * 1000:.0f} ms in {test}" for test, pause in worst if pause >= 0.01
        ) or "none of 10 ms or more"


_gc_pauses = _GcPauses()
gc.callbacks.append(_gc_pauses)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (about 400,000 objects: every parametrized spec case) out of
    the garbage collector's reach.

    Without this each full collection walks them all and stops the event loop for 250-450 ms
    on the CI machine, longer than the 250 ms connectTimeoutMS some spec tests set (the SDAM
    test "Driver extends timeout while streaming" failed a CI run that way). A test's own
    objects are collected as before.
    """
    gc.collect()
    gc.freeze()
    _gc_pauses.counting = True


#: Tests between two freezes of what earlier tests left alive (see pytest_runtest_logfinish).
FREEZE_EVERY = 200
_finished = 0


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """Every ``FREEZE_EVERY`` tests, between tests, collect and freeze what is still alive.

    What the tests leave alive (pytest's reports, module fixtures, caches) grows over a full
    run, and a full collection walks all of it: ten thousand tests in, one can stop a test's
    event loop past a 250 ms connectTimeoutMS (the SDAM spec test "Network error on Monitor
    check" timed out connecting to the simulator on 127.0.0.1 in a CI run). Frozen here, a
    full collection walks what the last few tests left and the running test's own objects.
    Collected first, so a test's garbage cycles are still freed; what is frozen is what was
    alive anyway.
    """
    global _finished
    _finished += 1
    if _finished % FREEZE_EVERY == 0:
        _gc_pauses.counting = False  # no test is running: this pause stops nobody
        try:
            gc.collect()
            gc.freeze()
        finally:
            _gc_pauses.counting = True


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _gc_pauses.test = nodeid


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(
        "longest garbage collection pauses: " + _gc_pauses.summary(5)
    )
