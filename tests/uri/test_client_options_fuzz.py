"""Bad input from the application gets the driver's own errors: whatever connection string and
keyword options reach ``AsyncMongoClient(...)``, construction either succeeds or raises
ConfigurationError (InvalidURI for syntax), never another exception type, and nothing that
would fail later on the wire (a lone surrogate in a name, a password, an option) gets through.

The four properties run 2,000 derandomized examples each (with test_uri_fuzz's 2,000, 10,000
in all; the same ones on every run, so CI is reproducible). ``ASYNCMONGO_FUZZ_EXAMPLES=N``
sets the per-test count, and ``ASYNCMONGO_FUZZ_RANDOM=1`` draws fresh examples, for a longer
hunt.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncmongo import AsyncMongoClient
from asyncmongo.core.uri.table import OPTIONS
from asyncmongo.errors import ConfigurationError, InvalidURI

EXAMPLES = int(os.environ.get("ASYNCMONGO_FUZZ_EXAMPLES", "2000"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("ASYNCMONGO_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Characters that matter to the parser: ASCII, separators, escapes, non-ASCII letters and
#: symbols, NUL, and lone surrogates (which ``st.text()`` never draws). A sampled alphabet keeps
#: generation cheap enough for 10,000 examples.
CHARS = st.sampled_from([*(chr(c) for c in range(32, 127)), "\x00", "\t", "\n", "é", "ß", "\u2603",
                         "\U0001f600", "\ufeff", "\udcff", "\ud800", "\udfff"])
TEXT = st.text(CHARS, max_size=12)
URI_CHARS = st.sampled_from([*"mongdb+srv:/@?&=,%[]:.;$ \\\"'aZ09-_\x00é", "%2F", "%zz",
                             "%ED%B3%BF", "\udcff", "\ud800", "27017", "::1"])
API_KEYWORDS = ["document_class", "tz_aware", "tzinfo", "uuidRepresentation",
                "uuid_representation", "unicode_decode_error_handler", "datetime_conversion",
                "connect", "observe_events"]
NAMES = [*sorted(OPTIONS), "ssl", "wtimeout", "j", "gssapiServiceName", "max_pool_size", "username",
         "password", "server_api", "driver_info", "driver", *API_KEYWORDS]
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | TEXT | st.binary(max_size=6)
#: One level of nesting is what options take (lists of compressors, tag sets, properties);
#: st.recursive would cost most of the run in generation.
ANY_VALUE = SCALAR | st.lists(SCALAR, max_size=3) | st.dictionaries(TEXT, SCALAR, max_size=3)


def construct(uri: Any, *args: Any, **kwargs: Any) -> None:
    """Build a client (it does not connect): succeed or raise ConfigurationError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            AsyncMongoClient(uri, *args, **kwargs)
        except ConfigurationError:
            pass


@FUZZ
@given(st.dictionaries(st.sampled_from(NAMES), ANY_VALUE, max_size=3),
       st.sampled_from(["mongodb://h", "h"]) | ANY_VALUE, st.none() | ANY_VALUE,
       st.sampled_from([(), [print]]) | ANY_VALUE)
def test_keyword_options(kwargs: dict[str, Any], host: Any, port: Any,
                         listeners: Any) -> None:
    construct("mongodb://h", **kwargs)
    construct(host, port, event_listeners=listeners)


@FUZZ
@given(st.sampled_from(sorted(OPTIONS)), TEXT)
def test_option_values_in_the_uri(name: str, value: str) -> None:
    construct(f"mongodb://u:p@h/?{name}={value}")
    construct("mongodb://h", **{name: value})


@FUZZ
@given(st.lists(URI_CHARS, max_size=32).map("".join))
def test_uri_shaped_text(tail: str) -> None:
    construct("mongodb://" + tail)
    construct("mongodb+srv://" + tail)


@FUZZ
@given(TEXT, TEXT, TEXT)
def test_credentials_and_names(user: str, password: str, name: str) -> None:
    construct(f"mongodb://{user}:{password}@h/{name}")
    construct("mongodb://h", username=user, password=password, appname=name or "a")


SURROGATE_INPUTS = [
    ("mongodb://h/?appname=\udcff", {}),
    ("mongodb://\udcff:p@h", {}),
    ("mongodb://u:\udcff@h", {}),
    ("mongodb://u:p@h/?authMechanism=PLAIN&authSource=$external&authMechanismProperties="
     "A:\udcff", {}),
    ("mongodb://h/?replicaSet=rs\ud800", {}),
    ("mongodb://h/db\udcff", {}),
    ("mongodb://h\udcff", {}),
    ("mongodb://h", {"appname": "\udcff"}),
    ("mongodb://h", {"username": "\udcff", "password": "p"}),
    ("mongodb://h", {"username": "u", "password": "p\udcff"}),
    ("mongodb://h", {"replicaSet": "\udcff"}),
    ("mongodb://h", {"compressors": ["zlib", "\udcff"]}),
    ("mongodb://h", {"authMechanismProperties": {"SERVICE_NAME": "\udcff"}}),
    ("mongodb://h", {"readPreference": "secondary", "readPreferenceTags": [{"dc": "\udcff"}]}),
    ("mongodb://h", {"unicode_decode_error_handler": "\udcff"}),
]


@pytest.mark.parametrize(("uri", "kwargs"), SURROGATE_INPUTS)
def test_a_lone_surrogate_is_refused_at_construction(uri: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        AsyncMongoClient(uri, **kwargs)
    assert "surrogate" in str(info.value)
    if not kwargs:
        assert isinstance(info.value, InvalidURI)
    assert "\udcff" not in str(info.value) and "\ud800" not in str(info.value)
