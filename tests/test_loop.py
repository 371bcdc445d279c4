"""The loop selection of conftest.py is in force."""

from __future__ import annotations

import asyncio
import os
import types

import pytest


async def test_runs_on_the_chosen_loop() -> None:
    loop = asyncio.get_running_loop()
    wanted = os.environ.get("ASYNCMONGO_TEST_LOOP", "asyncio")
    assert ("uvloop" in type(loop).__module__) == (wanted == "uvloop")


def test_runtime_tests_get_both_loops(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conftest

    monkeypatch.delenv("ASYNCMONGO_TEST_LOOP", raising=False)

    def loops_for(path: object) -> set[str]:
        item = types.SimpleNamespace(path=path)
        return set(conftest.pytest_asyncio_loop_factories(request.config, item))  # type: ignore[arg-type]

    assert loops_for(conftest.ROOT / "tests" / "pool" / "test_pool.py") == {"asyncio", "uvloop"}
    assert loops_for(conftest.ROOT / "tests" / "sessions" / "x.py") == {"asyncio", "uvloop"}
    assert loops_for(conftest.ROOT / "tests" / "bson" / "test_bson_codec.py") == {"asyncio"}
    assert loops_for(conftest.ROOT / "spec_tests" / "test_cmap.py") == {"asyncio"}
