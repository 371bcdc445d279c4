"""The connection-string spec suite: syntax, hosts, userinfo, auth database, warnings."""

from __future__ import annotations

from typing import Any

import pytest

from spec_tests.support.uri_cases import cases, run_uri_case


@pytest.mark.parametrize("case", cases("connection-string"))
def test_connection_string(case: dict[str, Any]) -> None:
    run_uri_case(case)
