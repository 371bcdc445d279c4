"""MongoDB Extended JSON (specs/extended-json): BSON values as JSON text and back.

``dumps(value)`` writes Relaxed Extended JSON (``json_options=CANONICAL_JSON_OPTIONS`` for
the canonical, type-preserving form); ``loads(text)`` reads canonical and relaxed input
(and, with ``accept_legacy=True``, the legacy forms), keeping key order. Values become the
same Python objects the BSON decoder gives for the same ``JSONOptions`` codec fields, so
``encode(loads(text))`` is the BSON the text describes.

Errors: malformed JSON raises :class:`json.JSONDecodeError`; a malformed ``$`` type wrapper
(``{"$oid": 42}``, ``{"$date": {...}, "extra": 1}``, a bad ``$numberDecimal`` ...) raises
:class:`~asyncmongo.bson.errors.InvalidExtendedJSON`. Both are ValueErrors. Writing a value
with no BSON type raises :class:`~asyncmongo.bson.errors.InvalidDocument` (unless a
``default=`` function is passed through to ``json.dumps``). Nesting: at least the spec's
200 levels are read and 100 written; far deeper input raises the same typed errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson._json_decode import make_document, parse_json_int
from asyncmongo.bson._json_decode import object_hook as _object_hook
from asyncmongo.bson._json_encode import to_extended_json
from asyncmongo.bson._json_options import (
    CANONICAL_JSON_OPTIONS,
    DEFAULT_JSON_OPTIONS,
    RELAXED_JSON_OPTIONS,
    JSONMode,
    JSONOptions,
)
from asyncmongo.bson.errors import InvalidDocument, InvalidExtendedJSON

__all__ = [
    "CANONICAL_JSON_OPTIONS",
    "DEFAULT_JSON_OPTIONS",
    "RELAXED_JSON_OPTIONS",
    "JSONMode",
    "JSONOptions",
    "dumps",
    "loads",
    "object_hook",
    "object_pairs_hook",
    "to_extended_json",
]


def dumps(obj: Any, json_options: JSONOptions = RELAXED_JSON_OPTIONS, **json_kwargs: Any) -> str:
    """``obj`` as Extended JSON text, in ``json_options.json_mode``.

    Document key order is kept. ``json_kwargs`` go to :func:`json.dumps` (``indent``,
    ``sort_keys``, ``default``, ...).
    """
    try:
        tree = to_extended_json(obj, json_options, json_kwargs.get("default"))
    except RecursionError:
        raise InvalidDocument("value nested too deeply (or containing itself)") from None
    return json.dumps(tree, **json_kwargs)


def loads(s: str | bytes | bytearray, json_options: JSONOptions = DEFAULT_JSON_OPTIONS) -> Any:
    """Parse Extended JSON text (canonical or relaxed; legacy too with ``accept_legacy``).

    The top-level object is always a document, never a type wrapper (spec: the rules apply
    to objects "other than the top-level object"), so ``loads('{"$ref": 1}')`` and a
    top-level ``{"$regex": ...}`` filter stay documents.
    """
    parser = _Parser(json_options)
    try:
        value = json.loads(
            s,
            object_pairs_hook=parser.pairs_hook,
            parse_int=parse_json_int,
            parse_constant=_reject_constant,
        )
    except RecursionError:
        raise InvalidExtendedJSON("JSON text nested too deeply") from None
    top_level_object = parser.last_pairs is not None and _is_object_text(s)
    for call, error in parser.errors:
        if not (top_level_object and call == parser.calls):
            raise error
    if top_level_object:
        # The last object closed is the top-level one: rebuild it as a plain document.
        return make_document(dict(parser.last_pairs or ()), json_options)
    return value


def object_hook(dct: Mapping[str, Any], json_options: JSONOptions = DEFAULT_JSON_OPTIONS) -> Any:
    """Turn one parsed JSON object (members already converted) into its BSON value.

    For ``json.load(f, object_pairs_hook=object_pairs_hook(options))``-style loaders that
    convert every object, the top-level one included.
    """
    return _object_hook(dct, json_options)


def object_pairs_hook(json_options: JSONOptions = DEFAULT_JSON_OPTIONS) -> Any:
    """An ``object_pairs_hook`` for :mod:`json` that converts Extended JSON objects."""

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        return _object_hook(dict(pairs), json_options)

    return hook


class _Parser:
    """One loads() call: converts each object, remembering the last one's members.

    A wrapper error is recorded rather than raised at once, because only when the parse
    ends is it known whether the failing object was the top-level one (never a wrapper).
    """

    __slots__ = ("calls", "errors", "json_options", "last_pairs")

    def __init__(self, json_options: JSONOptions) -> None:
        self.json_options = json_options
        self.last_pairs: list[tuple[str, Any]] | None = None
        self.calls = 0
        self.errors: list[tuple[int, InvalidExtendedJSON]] = []

    def pairs_hook(self, pairs: list[tuple[str, Any]]) -> Any:
        self.calls += 1
        self.last_pairs = pairs
        try:
            return _object_hook(dict(pairs), self.json_options)
        except InvalidExtendedJSON as exc:
            self.errors.append((self.calls, exc))
            return exc


def _is_object_text(s: str | bytes | bytearray) -> bool:
    text = s.decode("utf-8", "replace") if isinstance(s, bytes | bytearray) else s
    return text.lstrip(" \t\r\n\ufeff").startswith("{")


def _reject_constant(name: str) -> Any:
    raise InvalidExtendedJSON(
        f'{name} is not valid JSON; write {{"$numberDouble": "{name}"}} instead'
    )
