"""The bson-corpus spec suite (specs/bson-corpus): every file, every case its own test.

Python decodes BSON into native values (a codec "with an intermediate representation"), so
each valid case checks what the corpus README prescribes for such codecs:

- cB:  native_to_bson(bson_to_native(cB)) == cB, and the native value written as canonical
       (and relaxed, when given) Extended JSON equals cEJ (rEJ);
- cEJ: native_to_canonical_extended_json(json_to_native(cEJ)) == cEJ, and
       native_to_bson(json_to_native(cEJ)) == cB unless the case is lossy;
- dB:  native_to_bson(bson_to_native(dB)) == cB;
- dEJ: the same two checks as cEJ, against cEJ and cB;
- rEJ: native_to_relaxed_extended_json(json_to_native(rEJ)) == rEJ;
- converted_bson / converted_extjson (deprecated types): the converted pair is itself
  consistent both ways.

decodeErrors must raise InvalidBSON. parseErrors: for documents (0x00) and binary (0x05) the
string must be valid plain JSON that Extended JSON parsing (plus encoding, for NUL bytes in
keys and regexes) rejects; for Decimal128 (0x13) the Decimal128 constructor must reject it.

JSON texts are compared after parsing with key order kept and numbers typed (int vs double,
-0.0 vs 0.0), because the corpus writes JSON with its own spacing, escapes and exponent case.

The README's prose test (NUL bytes refused in keys and regexes when encoding) is here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.bson.codec import decode, encode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import (
    InvalidBSON,
    InvalidDecimal128,
    InvalidDocument,
    InvalidExtendedJSON,
)
from asyncmongo.bson.json_util import JSONMode, JSONOptions, dumps, loads
from asyncmongo.bson.types import DatetimeConversion, Regex

#: Every case runs on each codec implementation this install has (conftest.py).
pytestmark = pytest.mark.usefixtures("bson_impl")

CORPUS = Path(__file__).parent / "data" / "bson-corpus"

# Decode exactly as the corpus describes values: out-of-range dates as DatetimeMS, UUID
# subtypes kept as Binary (UNSPECIFIED), aware UTC datetimes.
CODEC_OPTIONS = CodecOptions(tz_aware=True, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
CANONICAL = JSONOptions.from_codec_options(CODEC_OPTIONS, JSONMode.CANONICAL)
RELAXED = JSONOptions.from_codec_options(CODEC_OPTIONS, JSONMode.RELAXED)


def _cases(kind: str) -> Iterator[Any]:
    for path in sorted(CORPUS.rglob("*.json")):
        suite = json.loads(path.read_text(encoding="utf-8"))
        name = path.relative_to(CORPUS).as_posix()
        for index, case in enumerate(suite.get(kind, [])):
            test_id = f"{name}:{kind}:{index}:{case['description']}"
            yield pytest.param(suite, case, id=test_id)


def _normal(text: str) -> Any:
    """JSON text as a comparable value: key order kept, numbers typed, -0.0 kept."""
    return json.loads(
        text,
        object_pairs_hook=lambda pairs: ("object", pairs),
        parse_int=lambda s: ("int", int(s)),
        parse_float=lambda s: ("double", repr(float(s))),
    )


def _assert_json(actual: str, expected: str) -> None:
    assert _normal(actual) == _normal(expected), f"\n  got:  {actual}\n  want: {expected}"


def _hex(data: bytes) -> str:
    return data.hex().upper()


@pytest.mark.parametrize(("suite", "case"), list(_cases("valid")))
def test_valid(suite: dict[str, Any], case: dict[str, Any]) -> None:
    canonical_bson = bytes.fromhex(case["canonical_bson"])
    canonical_extjson: str = case["canonical_extjson"]
    relaxed_extjson: str | None = case.get("relaxed_extjson")
    lossy = case.get("lossy", False)

    # cB input.
    native = decode(canonical_bson, codec_options=CODEC_OPTIONS)
    assert _hex(encode(native, codec_options=CODEC_OPTIONS)) == _hex(canonical_bson)
    _assert_json(dumps(native, CANONICAL), canonical_extjson)
    if relaxed_extjson is not None:
        _assert_json(dumps(native, RELAXED), relaxed_extjson)

    # cEJ input.
    from_json = loads(canonical_extjson, CANONICAL)
    _assert_json(dumps(from_json, CANONICAL), canonical_extjson)
    if not lossy:
        assert _hex(encode(from_json, codec_options=CODEC_OPTIONS)) == _hex(canonical_bson)

    # dB input.
    if "degenerate_bson" in case:
        degenerate = decode(bytes.fromhex(case["degenerate_bson"]), codec_options=CODEC_OPTIONS)
        assert _hex(encode(degenerate, codec_options=CODEC_OPTIONS)) == _hex(canonical_bson)

    # dEJ input.
    if "degenerate_extjson" in case:
        from_degenerate = loads(case["degenerate_extjson"], CANONICAL)
        _assert_json(dumps(from_degenerate, CANONICAL), canonical_extjson)
        if not lossy:
            encoded = encode(from_degenerate, codec_options=CODEC_OPTIONS)
            assert _hex(encoded) == _hex(canonical_bson)

    # rEJ input.
    if relaxed_extjson is not None:
        _assert_json(dumps(loads(relaxed_extjson, RELAXED), RELAXED), relaxed_extjson)

    # The converted form of a deprecated type, when given, is consistent both ways.
    if "converted_bson" in case:
        converted_bson = bytes.fromhex(case["converted_bson"])
        converted_extjson: str = case["converted_extjson"]
        converted = decode(converted_bson, codec_options=CODEC_OPTIONS)
        _assert_json(dumps(converted, CANONICAL), converted_extjson)
        reencoded = encode(loads(converted_extjson, CANONICAL), codec_options=CODEC_OPTIONS)
        assert _hex(reencoded) == _hex(converted_bson)


@pytest.mark.parametrize(("suite", "case"), list(_cases("decodeErrors")))
def test_decode_error(suite: dict[str, Any], case: dict[str, Any]) -> None:
    with pytest.raises(InvalidBSON):
        decode(bytes.fromhex(case["bson"]), codec_options=CODEC_OPTIONS)


@pytest.mark.parametrize(("suite", "case"), list(_cases("parseErrors")))
def test_parse_error(suite: dict[str, Any], case: dict[str, Any]) -> None:
    text: str = case["string"]
    bson_type = suite["bson_type"].lower()
    if bson_type in ("0x00", "0x05"):
        json.loads(text)  # The input is valid JSON: the error is Extended JSON's alone.
        with pytest.raises((InvalidExtendedJSON, InvalidDocument)):
            # Parsing into native values may succeed (a NUL in a key is a fine Python str);
            # then the README says the error must come when encoding to BSON.
            encode(loads(text, CANONICAL), codec_options=CODEC_OPTIONS)
    elif bson_type == "0x13":
        with pytest.raises(InvalidDecimal128):
            Decimal128(text)
    else:
        pytest.fail(f"the bson-corpus README defines no parseErrors rule for type {bson_type}")


# Prose test 1: "Prohibit null bytes in null-terminated strings when encoding BSON".
@pytest.mark.parametrize(
    "document",
    [
        pytest.param({"a\x00": 1}, id="field name within a root document"),
        pytest.param({"a": {"b\x00": 1}}, id="field name within a sub-document"),
        pytest.param({"a": Regex("b\x00", "i")}, id="pattern for a regular expression"),
        pytest.param({"a": Regex("b", "i\x00")}, id="flags for a regular expression"),
        pytest.param({"a": re.compile("b\x00")}, id="pattern of a native re.Pattern"),
    ],
)
def test_prose_null_bytes_prohibited_when_encoding(document: dict[str, Any]) -> None:
    with pytest.raises(InvalidDocument):
        encode(document, codec_options=CODEC_OPTIONS)
