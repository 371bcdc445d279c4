"""Test-wide settings: the event loop every async test runs on.

Set ``ASYNCMONGO_TEST_LOOP=uvloop`` to run every async test on uvloop instead of asyncio's
default loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    if os.environ.get("ASYNCMONGO_TEST_LOOP") == "uvloop":
        import uvloop

        return {"uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}
