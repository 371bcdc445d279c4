"""Text indexes as mongod stores and lists them (textIndexVersion 3).

A key ``{title: "text", body: "text"}`` becomes ``{_fts: "text", _ftsx: 1}`` (other fields of
a compound index keep their place before and after), and the listed index gains ``weights``
(one per text field, 1 unless given; ``$**`` for a wildcard text index, sorted by field as
mongod keeps them), ``default_language`` ("english"), ``language_override`` ("language") and
``textIndexVersion: 3``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.compare import integral
from asyncmongo.testing.store.errors import StoreError

TEXT_KEY = {"_fts": "text", "_ftsx": 1}
_OPTIONS = ("weights", "default_language", "language_override", "textIndexVersion")

# mongod's text search languages (textIndexVersion 3), by name and code, to the name.
MONGOD_LANGUAGES = {
    **{name: name for name in ("danish", "dutch", "english", "finnish", "french", "german",
                               "hungarian", "italian", "norwegian", "portuguese", "romanian",
                               "russian", "spanish", "swedish", "turkish", "none")},
    "da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french",
    "de": "german", "hu": "hungarian", "it": "italian", "nb": "norwegian", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "es": "spanish", "sv": "swedish", "tr": "turkish",
}


def is_text_key(key: Mapping[str, Any]) -> bool:
    """True for a key pattern with a text part (as given, or in mongod's stored form)."""
    return any(value == "text" for value in key.values())


def text_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The createIndexes ``spec`` in mongod's stored form when its key has a text part."""
    key = spec["key"]
    if not is_text_key(key) or "_fts" in key:
        return dict(spec)
    weights: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    for path, value in key.items():
        if value == "text":
            weights[path] = 1
            stored.update(TEXT_KEY)
        else:
            stored[path] = value
    given = spec.get("weights", {})
    if not isinstance(given, Mapping):
        raise StoreError(2, "text index option 'weights' must be an object")
    for path, weight in given.items():
        whole = integral(weight)
        if whole is None or not 0 < whole < 100_000:
            raise StoreError(2, f"text index weight must be in the exclusive interval "
                                f"(0,99999) but found: {weight} for field: {path}")
        weights[path] = whole
    result = {k: v for k, v in spec.items() if k not in _OPTIONS}
    result["key"] = stored
    result["weights"] = dict(sorted(weights.items()))
    language = spec.get("default_language", "english")
    if not isinstance(language, str) or language.lower() not in MONGOD_LANGUAGES:
        raise StoreError(2, f'unsupported language: "{language}" for text index version 3')
    result["default_language"] = language
    result["language_override"] = spec.get("language_override", "language")
    result["textIndexVersion"] = 3
    return result


def check_language_override(spec: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    """Refuse, as mongod does on insert and update, a ``document`` whose language override
    field (of the text index listed as ``spec``) is not a string (17261) or names a language
    mongod does not know (17262)."""
    field = spec.get("language_override", "language")
    if not isinstance(field, str) or field not in document:
        return
    value = document[field]
    if not isinstance(value, str):
        raise StoreError(17261, "found language override field in document with non-string "
                                "type")
    if value.lower() not in MONGOD_LANGUAGES:
        raise StoreError(17262, f"language override unsupported: {value}")
