"""Shared pieces of the URI-parsing spec runners (connection-string, uri-options, auth,
read-write-concern, initial-dns-seedlist-discovery): case loading and value comparison."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.core.uri import parse_uri_options
from asyncmongo.core.uri.table import canonical_name, fold_key
from asyncmongo.errors import ConfigurationError, ConfigurationWarning, DeprecatedOptionWarning

DATA = Path(__file__).resolve().parent.parent / "data"


def cases(suite: str, pattern: str = "**/*.json") -> list[Any]:
    """One pytest param per test case of every JSON file under ``data/<suite>``."""
    params = []
    for path in sorted((DATA / suite).glob(pattern)):
        tests = json.loads(path.read_text())["tests"]
        rel = path.relative_to(DATA / suite).with_suffix("")
        for case in tests:
            params.append(pytest.param(case, id=f"{rel}:{case['description']}"))
    return params


def option_key(key: str) -> str:
    """The canonical name of an option key from a test file (any case, aliases resolved)."""
    return canonical_name(key) or fold_key(key)


def plain(value: Any) -> Any:
    """Our values as JSON-like ones (tuples -> lists, mappings -> dicts)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def assert_options(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> None:
    for key, value in expected.items():
        name = option_key(key)
        assert name in actual, f"option {key!r} missing from {dict(actual)!r}"
        assert plain(actual[name]) == value, f"option {key!r}"


@contextmanager
def recorded_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record the URI parser's warnings (ConfigurationWarning, DeprecatedOptionWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found: list[warnings.WarningMessage] = []
        yield found
    found.extend(
        w for w in caught if issubclass(w.category, (ConfigurationWarning, DeprecatedOptionWarning))
    )


def run_uri_case(case: dict[str, Any]) -> None:
    """The shared format of the connection-string and uri-options suites.

    Parsing is lenient (invalid values warn and are ignored, as the connection-string spec
    says); ``valid: false`` means an error is raised.
    """
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            parse_uri_options(case["uri"], lenient=True)
        return
    with recorded_warnings() as found:
        parts, options = parse_uri_options(case["uri"], lenient=True)
    assert bool(found) == bool(case.get("warning")), [str(w.message) for w in found]
    if case.get("hosts") is not None:
        assert len(parts.hosts) == len(case["hosts"])
        for (host, port), want in zip(parts.hosts, case["hosts"], strict=True):
            assert host == want["host"]
            if want.get("port") is not None:
                assert port == want["port"]
            if want.get("type") == "unix":
                assert port is None
    auth = case.get("auth")
    if auth is not None:
        assert parts.username == auth["username"]
        assert parts.password == auth["password"]
        assert parts.database == auth["db"]
    if case.get("options") is not None:
        assert_options(case["options"], options)
