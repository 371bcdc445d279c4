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
