"""The uri-options spec suite: each option's type and range, conflicts, warnings."""

from __future__ import annotations

from typing import Any

import pytest

from spec_tests.support.uri_cases import cases, run_uri_case


@pytest.mark.parametrize("case", cases("uri-options"))
def test_uri_options(case: dict[str, Any]) -> None:
    run_uri_case(case)
