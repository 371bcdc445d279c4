"""The CMAP integration tests with their hello failpoint emulated in the establish factory.

spec_tests/test_cmap.py runs these files against the simulated deployment; this file keeps a
fast fake-connection version of each scenario. Its connections' establishment does what the
failpoint does to the handshake's ``hello`` (``blockConnection``/``blockTimeMS``: a delay;
``errorCode``: a failed hello), so the pool's side of each scenario (maxConnecting, waiting,
minPoolSize, interrupting pending connections, clearing on a background error) is checked
without a server. The times are the spec's, so this file takes a few seconds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.errors import OperationFailure
from spec_tests.support.cmap_runner import CmapRunner, FakeConnection

SUITE = Path(__file__).parents[2] / "spec_tests/data/connection-monitoring-and-pooling/cmap-format"


class HelloFailPoint:
    """A failCommand failpoint on hello/isMaster, applied during establishment."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        assert spec["configureFailPoint"] == "failCommand"
        data = spec["data"]
        assert {"hello", "isMaster"} & set(data["failCommands"])
        mode = spec["mode"]
        self.remaining = None if mode == "alwaysOn" else mode["times"]
        self.block = data["blockTimeMS"] / 1000 if data.get("blockConnection") else 0.0
        self.error_code = data.get("errorCode")

    async def establish(self, connection_id: int) -> FakeConnection:
        active = self.remaining is None or self.remaining > 0
        if self.remaining:
            self.remaining -= 1
        if active and self.block:
            await asyncio.sleep(self.block)
        if active and self.error_code is not None:
            raise OperationFailure("failpoint: hello failed", self.error_code)
        return FakeConnection(connection_id)


def _cases() -> list[Any]:
    out = []
    for path in sorted(SUITE.glob("*.json")):
        test = json.loads(path.read_text())
        if "failPoint" in test:
            out.append(pytest.param(test, id=path.stem))
    return out


@pytest.mark.parametrize("test", _cases())
async def test_cmap_integration_with_emulated_failpoint(test: dict[str, Any]) -> None:
    failpoint = HelloFailPoint(test["failPoint"])
    await CmapRunner(test, failpoint.establish, clear_on_background_error=True).run()
