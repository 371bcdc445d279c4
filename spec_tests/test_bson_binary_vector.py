"""Runner for spec_tests/data/bson-binary-vector (specs/bson-binary-vector, its README).

Valid cases: encoding {test_key: Binary.from_vector(vector, dtype, padding)} gives exactly
canonical_bson, and decoding canonical_bson gives back the values, dtype and padding.
Invalid cases: encoding the vector (if given) raises, and decoding canonical_bson (if given)
into a vector raises.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.bson import Binary, BinaryVectorDtype, BSONError, decode, encode
from spec_tests.support.spec_json import load_spec_json

SUITE = Path(__file__).resolve().parent / "data" / "bson-binary-vector"


def _cases() -> list[Any]:
    params = []
    for path in sorted(SUITE.rglob("*.json")):
        spec = load_spec_json(path)
        for case in spec["tests"]:
            case_id = f"{path.relative_to(SUITE).with_suffix('')}::{case['description']}"
            params.append(pytest.param(spec["test_key"], case, id=case_id))
    return params


CASES = _cases()


def test_the_suite_is_there() -> None:
    assert len(CASES) >= 20


def _as_float32(values: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


@pytest.mark.parametrize(("test_key", "case"), CASES)
def test_vector_case(test_key: str, case: dict[str, Any]) -> None:
    dtype = int(case["dtype_hex"], 16)
    padding = case.get("padding", 0)
    if case["valid"]:
        _check_valid(test_key, case, BinaryVectorDtype(dtype), padding)
    else:
        _check_invalid(test_key, case, dtype, padding)


def _check_valid(
    test_key: str, case: dict[str, Any], dtype: BinaryVectorDtype, padding: int
) -> None:
    assert dtype.name == case["dtype_alias"]
    canonical = bytes.fromhex(case["canonical_bson"])
    binary = Binary.from_vector(case["vector"], dtype, padding)
    assert encode({test_key: binary}) == canonical
    decoded = decode(canonical)[test_key]
    assert isinstance(decoded, Binary) and decoded.subtype == 9
    vector = decoded.as_vector()
    assert vector.dtype == dtype
    assert vector.padding == padding
    if dtype == BinaryVectorDtype.FLOAT32:
        # Python has no float32: compare with the inputs rounded to float32.
        assert vector.data == _as_float32(case["vector"])
    else:
        assert vector.data == case["vector"]


def _check_invalid(test_key: str, case: dict[str, Any], dtype: int, padding: int) -> None:
    assert "vector" in case or "canonical_bson" in case
    if "vector" in case:
        with pytest.raises(BSONError):
            Binary.from_vector(case["vector"], dtype, padding)  # type: ignore[arg-type]
    if "canonical_bson" in case:
        decoded = decode(bytes.fromhex(case["canonical_bson"]))[test_key]
        with pytest.raises(BSONError):
            decoded.as_vector()
