"""The transactions spec's unified tests, run straight against the store: isolation,
commit/abort, write conflicts and their error labels, as the server decides them
(tests/store/unified.py plays the driver's session state machine; failpoint and mongos-pinning
cases are skipped with the reason)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.store.unified import cases, run_test


@pytest.mark.parametrize(("spec", "test"), cases("transactions"))
def test_transactions_unified_against_the_store(spec: dict[str, Any],
                                                test: dict[str, Any]) -> None:
    run_test(spec, test)
