"""Property tests: whatever string reaches parse(), only ConfigurationError/InvalidURI (or a
result) comes out, and a password never leaks into an error message."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncmongo.core.uri import ClientOptions, parse, parse_lenient
from asyncmongo.core.uri.table import OPTIONS
from asyncmongo.errors import ConfigurationError

DATA = Path(__file__).resolve().parents[2] / "spec_tests" / "data"
VALID_URIS = sorted(
    {
        case["uri"]
        for suite in ("connection-string", "uri-options", "auth/legacy")
        for path in (DATA / suite).glob("*.json")
        for case in json.loads(path.read_text())["tests"]
        if case.get("uri")
    }
)
ALPHABET = st.sampled_from([*"mongodb+srv:/@?&=,%[]:.;$ \\\"'aZ09-_\x00é\u2603", "%2F", "%zz"])
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_quietly(uri: str) -> ClientOptions | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for parser in (parse, parse_lenient):
            try:
                parser(uri)
            except ConfigurationError:
                pass
    return None


@FUZZ
@given(st.text())
def test_random_text(uri: str) -> None:
    _parse_quietly(uri)
    _parse_quietly("mongodb://" + uri)
    _parse_quietly("mongodb+srv://" + uri)


@FUZZ
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_uri_shaped_text(tail: str) -> None:
    _parse_quietly("mongodb://" + tail)
    _parse_quietly("mongodb+srv://" + tail)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    uri: str = draw(st.sampled_from(VALID_URIS))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(uri)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(ALPHABET | st.characters())
        if action == "insert":
            uri = uri[:pos] + char + uri[pos:]
        elif action == "delete":
            uri = uri[:pos] + uri[pos + 1 :]
        else:
            uri = uri[:pos] + char + uri[pos + 1 :]
    return uri


@FUZZ
@given(mutated())
def test_mutations_of_valid_uris(uri: str) -> None:
    _parse_quietly(uri)


@FUZZ
@given(
    password=st.text(alphabet=st.characters(codec="utf-8"), min_size=6, max_size=20),
    rest=st.sampled_from(
        [
            "h:bad",
            "h/?w=-1",
            "h/x/y",
            "h/?authMechanism=MONGODB-X509",
            "/h",
            "h/?tls=1&ssl=0",
            "h,h2/?directConnection=true",
            "h/?authMechanism=GSSAPI&authSource=x",
            "[::1",
        ]
    ),
)
def test_passwords_do_not_leak_into_errors(password: str, rest: str) -> None:
    for encoded in (quote(password, safe=""), password):
        uri = f"mongodb://user:{encoded}@{rest}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parse(uri)
        except ConfigurationError as exc:
            message = str(exc)
            # the secret is only in userinfo, and not a word of the message any password gets
            # ("string" is in "... or a string")
            if password not in uri.replace(encoded, "", 1) and password not in _stock(rest):
                assert password not in message
                assert encoded not in message


def _stock(rest: str) -> str:
    """The error message for ``rest`` with a password that appears in no message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse(f"mongodb://user:QzQzQzQz@{rest}")
    except ConfigurationError as exc:
        return str(exc)
    return ""


OPTION_NAMES = [*sorted(OPTIONS), "ssl", "wtimeout", "j", "gssapiServiceName", "max_pool_size"]
ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.binary(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@FUZZ
@given(st.dictionaries(st.sampled_from(OPTION_NAMES), ANY_VALUE, max_size=4))
def test_random_keyword_values(kwargs: dict[str, object]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for uri in ("mongodb://h", "mongodb+srv://a.b.c"):
            try:
                parse(uri, **kwargs)
            except ConfigurationError:
                pass
