"""The unified tests of the retryable-writes, collection-management and index-management specs,
run straight against the store (see tests/store/unified.py; failpoint, search-index and
driver-only cases are skipped with the reason)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.store.unified import cases, run_test

SUITES = ("retryable-writes", "collection-management", "index-management")


@pytest.mark.parametrize(("spec", "test"), [case for suite in SUITES for case in cases(suite)])
def test_unified_against_the_store(spec: dict[str, Any], test: dict[str, Any]) -> None:
    run_test(spec, test)
