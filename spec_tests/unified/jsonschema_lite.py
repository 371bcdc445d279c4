"""A small JSON Schema validator: the subset the unified test format's schema needs.

The unified test format is defined by a JSON schema (``schema-1.x.json``) that is not
vendored here, and the ``jsonschema`` package is not a project dependency; the runner
therefore carries the schema as Python data (:mod:`spec_tests.unified.schema_def`) and
checks it with this validator. Supported keywords: ``type``, ``properties``, ``required``,
``additionalProperties``, ``patternProperties``, ``propertyNames``, ``items``, ``minItems``,
``minProperties``, ``maxProperties``, ``enum``, ``const``, ``pattern``, ``allOf``,
``anyOf``, ``oneOf``, ``not`` and ``$ref`` (``"#/definitions/<name>"``).

Values are the plain output of :func:`json.loads` (dicts, lists, str, int, float, bool,
None), exactly what the official schema validates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SchemaViolation", "validate"]

Schema = Mapping[str, Any]


class SchemaViolation(Exception):
    """A value does not satisfy the schema; ``path`` says where (``$.tests[0].operations``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "null":
        return value is None
    raise SchemaViolation("<schema>", f"unknown type {name!r}")


def validate(value: Any, schema: Schema, definitions: Mapping[str, Schema],
             path: str = "$") -> None:
    """Raise :class:`SchemaViolation` unless ``value`` satisfies ``schema``."""
    _Validator(definitions).check(value, schema, path)


class _Validator:
    __slots__ = ("_definitions",)

    def __init__(self, definitions: Mapping[str, Schema]) -> None:
        self._definitions = definitions

    def check(self, value: Any, schema: Schema, path: str) -> None:
        if "$ref" in schema:
            name = schema["$ref"].removeprefix("#/definitions/")
            self.check(value, self._definitions[name], path)
        self._check_type(value, schema, path)
        self._check_values(value, schema, path)
        if isinstance(value, dict):
            self._check_object(value, schema, path)
        if isinstance(value, list):
            self._check_array(value, schema, path)
        self._check_combinators(value, schema, path)

    def _check_type(self, value: Any, schema: Schema, path: str) -> None:
        wanted = schema.get("type")
        if wanted is None:
            return
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        if not any(_is_type(value, name) for name in names):
            raise SchemaViolation(path, f"expected {'/'.join(names)}, got {type(value).__name__}")

    def _check_values(self, value: Any, schema: Schema, path: str) -> None:
        if "const" in schema and not _same(value, schema["const"]):
            raise SchemaViolation(path, f"must be {schema['const']!r}")
        if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
            raise SchemaViolation(path, f"{value!r} is not one of {schema['enum']!r}")
        pattern = schema.get("pattern")
        if pattern is not None and isinstance(value, str) and not re.search(pattern, value):
            raise SchemaViolation(path, f"{value!r} does not match {pattern!r}")

    def _check_object(self, value: dict[str, Any], schema: Schema, path: str) -> None:
        for key in schema.get("required", ()):
            if key not in value:
                raise SchemaViolation(path, f"missing required property {key!r}")
        if len(value) < schema.get("minProperties", 0):
            raise SchemaViolation(path, f"needs at least {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            raise SchemaViolation(path, f"allows at most {schema['maxProperties']} properties")
        properties: Mapping[str, Schema] = schema.get("properties", {})
        patterns: Mapping[str, Schema] = schema.get("patternProperties", {})
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        for key, item in value.items():
            where = f"{path}.{key}"
            if names is not None:
                self.check(key, names, f"{where} (name)")
            matched = False
            if key in properties:
                matched = True
                self.check(item, properties[key], where)
            for pattern, sub in patterns.items():
                if re.search(pattern, key):
                    matched = True
                    self.check(item, sub, where)
            if matched:
                continue
            if extra is False:
                raise SchemaViolation(where, "additional property not allowed")
            if isinstance(extra, Mapping):
                self.check(item, extra, where)

    def _check_array(self, value: list[Any], schema: Schema, path: str) -> None:
        if len(value) < schema.get("minItems", 0):
            raise SchemaViolation(path, f"needs at least {schema['minItems']} items")
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                self.check(item, items, f"{path}[{index}]")

    def _check_combinators(self, value: Any, schema: Schema, path: str) -> None:
        for sub in schema.get("allOf", ()):
            self.check(value, sub, path)
        if "anyOf" in schema and self._count_matches(value, schema["anyOf"], path) == 0:
            raise SchemaViolation(path, "matches none of the anyOf alternatives")
        if "oneOf" in schema and self._count_matches(value, schema["oneOf"], path) != 1:
            raise SchemaViolation(path, "must match exactly one of the oneOf alternatives")
        if "not" in schema and self._count_matches(value, [schema["not"]], path) == 1:
            raise SchemaViolation(path, "matches a forbidden schema")

    def _count_matches(self, value: Any, alternatives: list[Schema], path: str) -> int:
        count = 0
        for sub in alternatives:
            try:
                self.check(value, sub, path)
            except SchemaViolation:
                continue
            count += 1
        return count


def _same(left: Any, right: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)
