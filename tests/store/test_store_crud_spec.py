"""The CRUD spec's unified tests, run straight against the store (tests/store/unified.py
translates each operation into the command a driver sends and checks outcomes, results and
server errors; driver-only cases are skipped with the reason)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.store.unified import cases, run_test


@pytest.mark.parametrize(("spec", "test"), cases("crud"))
def test_crud_unified_against_the_store(spec: dict[str, Any], test: dict[str, Any]) -> None:
    run_test(spec, test)
