"""The auth spec's connection-string tests (auth/legacy): credentials built from a URI."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.core.uri import parse
from asyncmongo.errors import ConfigurationError
from spec_tests.support.uri_cases import cases

# Auth spec changelog 2025-09-30, "Remove support for explicitly specifying MONGODB-AWS
# authentication properties", and its "Obtaining Credentials" section: "If credentials are
# provided in the URI or client options, the driver MUST raise an error." The vendored file
# still has two older cases expecting such a URI to be accepted, next to the newer cases
# ("should throw an exception if username and password provided (MONGODB-AWS)") expecting the
# error; the two older ones contradict the spec and the newer cases, so they are skipped.
_STALE_AWS_CASES = {
    "should use username and password if specified (MONGODB-AWS)",
    "should use username, password and session token if specified (MONGODB-AWS)",
}


@pytest.mark.parametrize("case", cases("auth", "legacy/*.json"))
def test_auth_connection_string(case: dict[str, Any]) -> None:
    if case["description"] in _STALE_AWS_CASES:
        pytest.skip(
            "stale case: auth spec 2025-09-30 requires an error for MONGODB-AWS credentials "
            "in the URI (the same file's newer cases assert that error)"
        )
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            parse(case["uri"])
        return
    credential = parse(case["uri"]).credential
    expected = case.get("credential")
    if expected is None:
        assert credential is None
        return
    assert credential is not None
    for key in ("username", "password", "source", "mechanism"):
        if key in expected:
            assert getattr(credential, key) == expected[key], key
    properties = expected.get("mechanism_properties")
    if properties is not None:
        for key, value in properties.items():
            assert credential.mechanism_properties.get(key) == value, key
