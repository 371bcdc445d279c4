"""The simulator against jongodb on generated workloads (see tests/differential_server).

The short run (``DIFFERENTIAL_CASES`` unset: 400 seeds) belongs to the normal test run; the
long one is ``tox -e differential`` (``DIFFERENTIAL_CASES``, default 5000 there, and
``DIFFERENTIAL_FIRST_SEED`` to start elsewhere). A disagreement fails the test with the case
printed: fix the simulator the way mongod behaves, or, where jongodb is the one that differs
from the manual, add the deviation to ``deviations.py``.
"""

from __future__ import annotations

import os
import time

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.testing.deployment import Standalone
from tests.differential_server.harness import differential
from tests.support.jongodb import jongodb_uri  # noqa: F401 - the fixture

pytestmark = [pytest.mark.jongodb, pytest.mark.timeout(1800)]

SHORT_RUN = 400


async def test_simulator_agrees_with_jongodb(jongodb_uri: str) -> None:  # noqa: F811
    cases = int(os.environ.get("DIFFERENTIAL_CASES", SHORT_RUN))
    first = int(os.environ.get("DIFFERENTIAL_FIRST_SEED", 0))
    database = f"differential_{os.getpid()}_{time.time_ns()}"
    async with Standalone() as deployment, \
            AsyncMongoClient(deployment.uri) as simulator, \
            AsyncMongoClient(jongodb_uri) as jongodb:
        report = await differential(range(first, first + cases), simulator[database],
                                    jongodb[database])
    print(report)
    assert report.cases == cases
    assert report.compared >= cases // 3, report
    assert not report.disagreements, "\n\n".join(
        [repr(report), *report.disagreements[:20]])
