"""Decimal128 (specs/bson-decimal128): parsing, printing, clamping, rounding, BID bytes."""

from __future__ import annotations

import copy
import decimal
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import BSONError, InvalidDecimal128

MAX_COEFFICIENT = 10**34 - 1


# The numeric strings listed in the spec's "From String Representation" section.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", "0"),
        ("12", "12"),
        ("-76", "-76"),
        ("12.70", "12.70"),
        ("+0.003", "0.003"),
        ("017.", "17"),
        (".5", "0.5"),
        ("4E+9", "4E+9"),
        ("0.73e-7", "7.3E-8"),
        ("Inf", "Infinity"),
        ("-infinity", "-Infinity"),
        ("NaN", "NaN"),
        ("-NaN", "NaN"),
        ("-0", "-0"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1E-7"),
        ("1E+3", "1E+3"),
        ("1000", "1000"),
        ("-1.23E-10", "-1.23E-10"),
    ],
)
def test_spec_examples(text: str, expected: str) -> None:
    assert str(Decimal128(text)) == expected


def test_preferred_exponent_is_kept() -> None:
    # Spec Q&A: "2.00" stays 200E-2 and differs from "2.0" (20E-1).
    assert str(Decimal128("2.00")) == "2.00"
    assert Decimal128("2.00") != Decimal128("2.0")
    assert Decimal128("2.00").to_decimal() == Decimal128("2.0").to_decimal()


def test_clamping_pads_the_coefficient() -> None:
    assert str(Decimal128("1E+6112")) == "1.0E+6112"
    assert str(Decimal128("1E+6144")) == "1." + "0" * 33 + "E+6144"
    assert str(Decimal128("0E+9999")) == "0E+6111"
    assert str(Decimal128("-0E-9999")) == "-0E-6176"


def test_exact_rounding_drops_trailing_zeros() -> None:
    assert str(Decimal128("10E-6177")) == "1E-6176"
    thirty_seven = "1234567890123456789012345678901234000"
    assert str(Decimal128(thirty_seven)) == "1.234567890123456789012345678901234E+36"
    assert Decimal128(thirty_seven).to_decimal() == decimal.Decimal(thirty_seven)


@pytest.mark.parametrize(
    "text",
    [
        "1E+6145",  # overflow: would need 35 digits
        "1E-6177",  # underflow: inexact
        "12345678901234567890123456789012345",  # 35 significant digits: inexact rounding
        "1E+99999999999999999999",  # huge exponents fail fast, without huge integers
        "1E-99999999999999999999",
    ],
)
def test_out_of_range_values_are_refused(text: str) -> None:
    with pytest.raises(InvalidDecimal128):
        Decimal128(text)


@pytest.mark.parametrize(
    "text", ["", ".", "1e", "E1", " 1", "1 ", "--1", "1.2.3", "Infi", "NaNs", "sNaN", "\u0661"]
)
def test_bad_syntax_is_refused(text: str) -> None:
    with pytest.raises(InvalidDecimal128) as info:
        Decimal128(text)
    assert isinstance(info.value, BSONError)
    assert isinstance(info.value, ValueError)


def test_wrong_types() -> None:
    with pytest.raises(TypeError):
        Decimal128(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Decimal128.from_bid("0" * 16)  # type: ignore[arg-type]
    with pytest.raises(InvalidDecimal128):
        Decimal128.from_bid(b"\x00" * 15)


def test_bid_bytes_are_little_endian() -> None:
    # From the bson-corpus: 1 is coefficient 1, biased exponent 6176 (0x3040 in the top bits).
    one = Decimal128("1")
    assert one.bid == bytes.fromhex("01000000000000000000000000004030")
    assert Decimal128.from_bid(one.bid) == one
    assert Decimal128.from_bid(bytearray(one.bid)) == one
    assert Decimal128("Infinity").bid[-1] == 0x78
    assert Decimal128("-Infinity").bid[-1] == 0xF8
    assert Decimal128("NaN").bid[-1] == 0x7C


def test_non_canonical_coefficients_read_as_zero() -> None:
    # A coefficient above 10**34 - 1 (and the 11-prefixed large form) is zero (IEEE 754-2008).
    too_big = ((6176 << 113) | (MAX_COEFFICIENT + 1)).to_bytes(16, "little")
    assert str(Decimal128.from_bid(too_big)) == "0"
    large_form = ((0b11 << 125) | (6176 << 111) | 5).to_bytes(16, "little")
    assert str(Decimal128.from_bid(large_form)) == "0"


def test_value_object_behaviour() -> None:
    value = Decimal128("1.50")
    assert repr(value) == "Decimal128('1.50')"
    assert Decimal128(value) == value
    assert hash(Decimal128("1.50")) == hash(value)
    assert value != "1.50"
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    with pytest.raises(AttributeError):
        value._bits = 0
    with pytest.raises(TypeError):
        value + value  # type: ignore[operator]  # the spec forbids arithmetic


def test_to_decimal_specials() -> None:
    assert Decimal128("Infinity").to_decimal() == decimal.Decimal("Infinity")
    assert Decimal128("-Inf").to_decimal() == decimal.Decimal("-Infinity")
    assert Decimal128("NaN").to_decimal().is_qnan()
    assert Decimal128(decimal.Decimal("sNaN")).to_decimal().is_snan()
    assert Decimal128(decimal.Decimal("-0.00")).to_decimal().as_tuple() == (1, (0,), -2)


finite_decimals = st.builds(
    lambda sign, coefficient, exponent: decimal.Decimal(
        (sign, tuple(int(d) for d in str(coefficient)), exponent)
    ),
    st.integers(0, 1),
    st.one_of(st.integers(0, 1000), st.integers(0, MAX_COEFFICIENT)),
    st.integers(-6176, 6111),
)


@given(finite_decimals)
def test_agrees_with_decimal(value: decimal.Decimal) -> None:
    # Python's decimal implements the same General Decimal Arithmetic to-sci-string.
    ours = Decimal128(value)
    assert str(ours) == str(value)
    assert ours.to_decimal().as_tuple() == value.as_tuple()
    assert Decimal128(str(value)) == ours


@given(finite_decimals)
def test_canonical_string_round_trip(value: decimal.Decimal) -> None:
    canonical = str(Decimal128(value))
    assert str(Decimal128(canonical)) == canonical
    assert Decimal128.from_bid(Decimal128(canonical).bid) == Decimal128(canonical)


@given(st.binary(min_size=16, max_size=16))
def test_any_sixteen_bytes_print(raw: bytes) -> None:
    value = Decimal128.from_bid(raw)
    text = str(value)
    assert value.bid == raw
    if text not in ("NaN", "Infinity", "-Infinity"):
        # Finite values print a string that parses back to the same value.
        assert Decimal128(text).to_decimal() == value.to_decimal()
