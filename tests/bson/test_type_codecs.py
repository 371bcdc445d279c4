"""Custom type codecs (TypeRegistry, TypeEncoder, TypeDecoder, TypeCodec, fallback_encoder).

Behaviour follows PyMongo's: encoders by exact type (subclasses of a custom type are not
encoded), after the built-in types and before the fallback encoder; a custom encoder's
result is not custom-encoded again, a fallback encoder's result not passed to the fallback
again; ints beyond int64 go to the fallback encoder; decoders apply per element by exact
type, errors they raise pass unchanged. Each behaviour runs on both implementations and,
where PyMongo is installed, is compared with PyMongo's bytes, values and errors.
"""

from __future__ import annotations

import decimal
from typing import Any

import pytest

import asyncmongo.bson as am
from asyncmongo.bson import (
    CodecOptions,
    InvalidDocument,
    TypeCodec,
    TypeDecoder,
    TypeEncoder,
    TypeRegistry,
)

pytestmark = pytest.mark.usefixtures("bson_impl")


class DecimalCodec(TypeCodec):
    python_type = decimal.Decimal
    bson_type = am.Decimal128

    def transform_python(self, value: Any) -> Any:
        return am.Decimal128(str(value))

    def transform_bson(self, value: Any) -> Any:
        return decimal.Decimal(str(value))


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


class PointEncoder(TypeEncoder):
    python_type = Point

    def transform_python(self, value: Any) -> Any:
        return [value.x, value.y]


class Tagged(TypeDecoder):
    bson_type = dict

    def transform_bson(self, value: Any) -> Any:
        return ("doc", value)


class Failing(TypeDecoder):
    bson_type = int

    def transform_bson(self, value: Any) -> Any:
        raise ValueError("decoder failed")


def opts(*codecs: Any, fallback: Any = None) -> CodecOptions:
    return CodecOptions(type_registry=TypeRegistry(list(codecs), fallback))


def test_encoder_and_decoder_round_trip() -> None:
    options = opts(DecimalCodec(), PointEncoder())
    data = am.encode({"d": decimal.Decimal("1.25"), "p": Point(1, 2)}, codec_options=options)
    assert am.decode(data) == {"d": am.Decimal128("1.25"), "p": [1, 2]}
    assert am.decode(data, options) == {"d": decimal.Decimal("1.25"), "p": [1, 2]}


def test_encoders_match_the_exact_type_only() -> None:
    class SubDecimal(decimal.Decimal):
        pass

    with pytest.raises(InvalidDocument, match="cannot encode"):
        am.encode({"d": SubDecimal("1")}, codec_options=opts(DecimalCodec()))


def test_fallback_encoder_gets_what_nothing_else_encodes() -> None:
    seen: list[Any] = []

    def fallback(value: Any) -> Any:
        seen.append(value)
        return str(value)

    options = opts(fallback=fallback)
    big = 2**70
    data = am.encode({"s": frozenset(), "big": big, "n": 5, "l": [object]}, codec_options=options)
    assert am.decode(data) == {"s": "frozenset()", "big": str(big), "n": 5, "l": [str(object)]}
    assert seen == [frozenset(), big, object]
    assert am.decode(am.encode({"i": am.Int64(1)}, codec_options=options)) == {"i": 1}


def test_custom_and_fallback_results_are_not_transformed_twice() -> None:
    # The fallback's value may be custom-encoded; a custom encoder's may not, and neither
    # the fallback encoder is called on its own result.
    options = opts(DecimalCodec(), fallback=lambda v: decimal.Decimal(2))
    assert am.decode(am.encode({"v": {1}}, codec_options=options)) == {"v": am.Decimal128("2")}
    looping = opts(fallback=lambda v: v)
    with pytest.raises(InvalidDocument, match="cannot encode"):
        am.encode({"v": {1}}, codec_options=looping)

    class SetEncoder(TypeEncoder):
        python_type = set

        def transform_python(self, value: Any) -> Any:
            return decimal.Decimal(3)

    with pytest.raises(InvalidDocument, match="cannot encode"):
        am.encode({"v": {1}}, codec_options=opts(DecimalCodec(), SetEncoder()))


def test_decoders_apply_per_element_by_exact_type() -> None:
    data = am.encode({"a": {"b": 1}, "c": [{"x": 1}, 2], "d": am.DBRef("c", 1)})
    got = am.decode(data, opts(Tagged()))
    assert got == {"a": ("doc", {"b": 1}), "c": [("doc", {"x": 1}), 2], "d": am.DBRef("c", 1)}
    assert am.decode(am.encode({"a": 1}), opts(Tagged())) == {"a": 1}  # not the top level


def test_decoder_errors_pass_unchanged() -> None:
    with pytest.raises(ValueError, match="decoder failed"):
        am.decode(am.encode({"a": [1]}), opts(Failing()))
    with pytest.raises(ValueError, match="decoder failed"):
        am.decode(am.encode({"c": am.Code("f", {"a": 1})}), opts(Failing()))


def test_registry_validation() -> None:
    class IntEncoder(TypeEncoder):
        python_type = bool

        def transform_python(self, value: Any) -> Any:
            return 1

    with pytest.raises(TypeError, match="cannot change how built-in types are encoded"):
        TypeRegistry([IntEncoder()])
    with pytest.raises(TypeError, match="Expected an instance of TypeEncoder"):
        TypeRegistry([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="is not a callable"):
        TypeRegistry(fallback_encoder=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="type_registry"):
        CodecOptions(type_registry=3)  # type: ignore[arg-type]
    registry = TypeRegistry([DecimalCodec()], str)
    assert registry.codecs[0].python_type is decimal.Decimal and registry.fallback_encoder is str
    assert CodecOptions().type_registry == TypeRegistry()
    assert hash(CodecOptions(type_registry=registry)) == hash(CodecOptions(type_registry=registry))


# -- compared with PyMongo --


@pytest.fixture
def pymongo_bson() -> Any:
    return pytest.importorskip("bson.codec_options", reason="PyMongo is not installed")


def _pymongo_codecs() -> tuple[Any, Any]:
    import bson
    from bson.codec_options import TypeCodec as PyMongoTypeCodec
    from bson.codec_options import TypeDecoder as PyMongoTypeDecoder

    class PyMongoDecimalCodec(PyMongoTypeCodec):
        python_type = decimal.Decimal
        bson_type = bson.Decimal128

        def transform_python(self, value: Any) -> Any:
            return bson.Decimal128(value)

        def transform_bson(self, value: Any) -> Any:
            return value.to_decimal()

    class PyMongoTagged(PyMongoTypeDecoder):
        bson_type = dict

        def transform_bson(self, value: Any) -> Any:
            return ("doc", value)

    return PyMongoDecimalCodec(), PyMongoTagged()


def _outcome(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except Exception as exc:  # compared by kind: PyMongo's errors are not asyncmongo's
        return ("error", type(exc).__name__)


def test_pymongo_registries_are_accepted_and_behave_alike(pymongo_bson: Any) -> None:
    import bson

    from asyncmongo.compat._values import pymongo_codec_options

    decimal_codec, tagged = _pymongo_codecs()
    for codecs, fallback in (
        ([decimal_codec], None),
        ([decimal_codec, tagged], None),
        ([decimal_codec], lambda v: decimal.Decimal(2) if isinstance(v, set) else str(v)),
    ):
        theirs = pymongo_bson.CodecOptions(
            type_registry=pymongo_bson.TypeRegistry(codecs, fallback)
        )
        ours = pymongo_codec_options(theirs)
        assert isinstance(ours.type_registry, TypeRegistry)
        for doc in (
            {"d": decimal.Decimal("3.25")},
            {"s": {1, 2}},
            {"big": 2**70},
            {"n": {"d": [decimal.Decimal("-1")]}},
        ):
            want = _outcome(bson.encode, doc, codec_options=theirs)
            got = _outcome(am.encode, doc, codec_options=ours)
            if isinstance(want, bytes):
                assert got == want
                assert am.decode(got, ours) == bson.decode(want, codec_options=theirs)
            else:
                assert isinstance(got, tuple)
        data = bson.encode({"a": bson.Decimal128("1.5"), "b": {"c": [bson.Decimal128("2")]}})
        assert am.decode(data, ours) == bson.decode(data, codec_options=theirs)


def test_validation_errors_match_pymongo(pymongo_bson: Any) -> None:
    def bool_encoder(base: type) -> Any:
        return type("BoolEncoder", (base,), {"python_type": bool, "transform_python": int})()

    for theirs_args, ours_args in (
        (([object()], None), ([object()], None)),
        (([], 3), ([], 3)),
        (([bool_encoder(pymongo_bson.TypeEncoder)], None), ([bool_encoder(TypeEncoder)], None)),
    ):
        with pytest.raises(TypeError) as theirs:
            pymongo_bson.TypeRegistry(*theirs_args)
        with pytest.raises(TypeError) as ours:
            TypeRegistry(*ours_args)
        # PyMongo's messages, up to the reprs of the objects in them.
        assert str(ours.value).split(" ")[:4] == str(theirs.value).split(" ")[:4]
