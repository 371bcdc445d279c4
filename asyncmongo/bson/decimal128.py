"""Decimal128: the BSON 128-bit decimal floating point type (BSON type 0x13).

An immutable value object over the 16 bytes found on the wire (IEEE 754-2008 decimal128,
binary integer decimal encoding, little-endian). Parsing and printing follow
specs/bson-decimal128 exactly: a string is stored with the exponent it was written with
(``"2.00"`` stays ``200E-2``), clamped or exactly rounded only when it must be, and rejected
with :class:`InvalidDecimal128` when that would lose digits. There is deliberately no
arithmetic (the spec forbids operator overloading); use :meth:`Decimal128.to_decimal`.
"""

from __future__ import annotations

import decimal
import re
from typing import Any, Final

from asyncmongo.bson.errors import InvalidDecimal128

__all__ = ["Decimal128"]

_EXPONENT_MAX: Final = 6111
_EXPONENT_MIN: Final = -6176
_EXPONENT_BIAS: Final = 6176
_MAX_DIGITS: Final = 34
_MAX_COEFFICIENT: Final = 10**_MAX_DIGITS - 1

_SIGN_BIT: Final = 1 << 127
_INFINITY: Final = 0x78 << 120  # combination field 11110
_NAN: Final = 0x7C << 120  # combination field 11111, quiet
_SIGNALING_NAN: Final = 0x7E << 120  # combination field 11111 and the signaling bit
_EXPONENT_MASK: Final = 0x3FFF
_COEFFICIENT_MASK: Final = (1 << 113) - 1
_LARGE_FORM_COEFFICIENT_MASK: Final = (1 << 111) - 1

# The numeric-string grammar of specs/bson-decimal128 ("From String Representation"):
# [sign] decimal-part [exponent-part] | [sign] infinity | [sign] nan. ASCII digits only;
# no whitespace; specials in any case.
_NUMERIC_STRING: Final = re.compile(
    r"(?P<sign>[+-])?"
    r"(?:(?P<int>[0-9]*)(?:(?P<point>\.)(?P<frac>[0-9]*))?(?:[eE](?P<exp>[+-]?[0-9]+))?"
    r"|(?P<inf>inf|infinity)"
    r"|(?P<nan>nan))",
    re.IGNORECASE | re.ASCII,
)


def _parse(text: str) -> int:
    """Parse a numeric string into the 128-bit integer of its BID encoding."""
    match = _NUMERIC_STRING.fullmatch(text)
    if match is None:
        raise InvalidDecimal128(f"invalid Decimal128 string: {text!r}")
    sign = _SIGN_BIT if match["sign"] == "-" else 0
    if match["inf"] is not None:
        return sign | _INFINITY
    if match["nan"] is not None:
        return sign | _NAN
    integer_digits = match["int"] or ""
    fraction_digits = match["frac"] or ""
    if not integer_digits and not fraction_digits:
        raise InvalidDecimal128(f"invalid Decimal128 string (no digits): {text!r}")
    coefficient = int(integer_digits + fraction_digits)
    exponent = int(match["exp"] or "0") - len(fraction_digits)
    coefficient, exponent = _fit(coefficient, exponent, text)
    return sign | _pack_finite(coefficient, exponent)


def _fit(coefficient: int, exponent: int, text: str) -> tuple[int, int]:
    """Bring (coefficient, exponent) into range by clamping or exact rounding, per the spec.

    Clamping (adding zeros to the coefficient to lower a too-large exponent) and rounding
    (dropping trailing zeros to raise a too-small exponent or shorten a too-long
    coefficient) change only the representation. Anything that would change the value is an
    overflow, an underflow or an inexact rounding, and is refused.
    """
    if coefficient == 0:
        # Zero has no digits to lose: only its exponent is clamped into range.
        return 0, min(max(exponent, _EXPONENT_MIN), _EXPONENT_MAX)
    digits = len(str(coefficient))
    # Rounding: the exponent must rise until it is in range and the coefficient fits.
    rise = max(_EXPONENT_MIN - exponent, digits - _MAX_DIGITS, 0)
    if rise:
        if rise >= digits or coefficient % 10**rise:
            raise InvalidDecimal128(f"Decimal128 value would be rounded inexactly: {text!r}")
        coefficient //= 10**rise
        exponent += rise
        digits -= rise
    # Clamping: a too-large exponent is lowered by padding the coefficient with zeros.
    if exponent > _EXPONENT_MAX:
        fall = exponent - _EXPONENT_MAX
        if digits + fall > _MAX_DIGITS:
            raise InvalidDecimal128(f"Decimal128 value overflows: {text!r}")
        coefficient *= 10**fall
        exponent = _EXPONENT_MAX
    return coefficient, exponent


def _pack_finite(coefficient: int, exponent: int) -> int:
    """Encode an in-range coefficient and exponent (sign excluded) as 128 bits."""
    return ((exponent + _EXPONENT_BIAS) << 113) | coefficient


def _from_decimal(value: decimal.Decimal) -> int:
    """Encode a decimal.Decimal exactly (its digits and exponent are kept as given)."""
    sign_flag, digit_tuple, exponent = value.as_tuple()
    sign = _SIGN_BIT if sign_flag else 0
    if exponent == "F":
        return sign | _INFINITY
    if exponent == "n":
        return sign | _NAN
    if exponent == "N":
        return sign | _SIGNALING_NAN
    coefficient = int("".join(map(str, digit_tuple)) or "0")
    coefficient, exponent = _fit(coefficient, exponent, str(value))
    return sign | _pack_finite(coefficient, exponent)


def _unpack_finite(bits: int) -> tuple[int, int]:
    """Return (coefficient, exponent) of a finite value; non-canonical coefficients are 0.

    IEEE 754-2008: a coefficient above 10**34 - 1, and every coefficient of the large form
    (combination field starting with 11), is non-canonical and read as zero.
    """
    if (bits >> 125) & 0b11 == 0b11:
        return 0, ((bits >> 111) & _EXPONENT_MASK) - _EXPONENT_BIAS
    coefficient = bits & _COEFFICIENT_MASK
    if coefficient > _MAX_COEFFICIENT:
        coefficient = 0
    return coefficient, ((bits >> 113) & _EXPONENT_MASK) - _EXPONENT_BIAS


def _to_string(bits: int) -> str:
    """The spec's "To String Representation" algorithm."""
    sign = "-" if bits & _SIGN_BIT else ""
    combination = (bits >> 122) & 0x1F
    if combination == 0x1F:
        return "NaN"
    if combination == 0x1E:
        return sign + "Infinity"
    coefficient, exponent = _unpack_finite(bits)
    digits = str(coefficient)
    adjusted = exponent + len(digits) - 1
    if exponent > 0 or adjusted < -6:
        mantissa = digits if len(digits) == 1 else f"{digits[0]}.{digits[1:]}"
        return f"{sign}{mantissa}E{adjusted:+d}"
    if exponent == 0:
        return sign + digits
    scale = -exponent
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


class Decimal128:
    """An immutable BSON Decimal128 value.

    ``Decimal128("1.50")``, ``Decimal128(decimal.Decimal("1.50"))`` or
    ``Decimal128.from_bid(sixteen_bytes)``. ``str()`` gives the spec's canonical string;
    equality and hashing go by the 16 encoded bytes, so ``Decimal128("1.0")`` and
    ``Decimal128("1.00")`` differ (they are different values to BSON).
    """

    __slots__ = ("_bits",)

    _bits: int

    def __init__(self, value: str | decimal.Decimal | Decimal128) -> None:
        if isinstance(value, Decimal128):
            bits = value._bits
        elif isinstance(value, str):
            bits = _parse(value)
        elif isinstance(value, decimal.Decimal):
            bits = _from_decimal(value)
        else:
            raise TypeError(
                f"Decimal128 needs a str, decimal.Decimal or Decimal128, not {type(value).__name__}"
            )
        object.__setattr__(self, "_bits", bits)

    @classmethod
    def from_bid(cls, value: bytes | bytearray | memoryview) -> Decimal128:
        """Build from the 16 little-endian BID bytes found in a BSON document."""
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"Decimal128.from_bid needs bytes, not {type(value).__name__}")
        if len(value) != 16:
            raise InvalidDecimal128(f"Decimal128 BID must be 16 bytes, got {len(value)}")
        instance = cls.__new__(cls)
        object.__setattr__(instance, "_bits", int.from_bytes(value, "little"))
        return instance

    @property
    def bid(self) -> bytes:
        """The 16 little-endian BID bytes, as written in BSON."""
        return self._bits.to_bytes(16, "little")

    def to_decimal(self) -> decimal.Decimal:
        """The same value as a decimal.Decimal (exact: Decimal has arbitrary precision)."""
        sign = 1 if self._bits & _SIGN_BIT else 0
        combination = (self._bits >> 122) & 0x1F
        if combination == 0x1F:
            signaling = self._bits & (1 << 121)
            return decimal.Decimal(("-" if sign else "") + ("sNaN" if signaling else "NaN"))
        if combination == 0x1E:
            return decimal.Decimal("-Infinity" if sign else "Infinity")
        coefficient, exponent = _unpack_finite(self._bits)
        return decimal.Decimal((sign, tuple(int(d) for d in str(coefficient)), exponent))

    def __str__(self) -> str:
        return _to_string(self._bits)

    def __repr__(self) -> str:
        return f"Decimal128('{self}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Decimal128):
            return self._bits == other._bits
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Decimal128):
            return self._bits != other._bits
        return NotImplemented

    def __hash__(self) -> int:
        return hash((Decimal128, self._bits))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Decimal128 is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Decimal128 is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Decimal128.from_bid, (self.bid,))
