"""collMod's ``index`` option: change one index's hidden, expireAfterSeconds, prepareUnique
or unique setting, as mongod 8.0 does.

The index is named by ``keyPattern`` or ``name`` (27 IndexNotFound otherwise). Each change
is reported as ``<option>_old`` / ``<option>_new`` in the reply. ``prepareUnique: true``
makes the index refuse new duplicate keys (11000) while the old ones stay; ``unique: true``
then converts it, unless documents still share a key: 359 CannotConvertIndexToUnique with
the ``violations`` (the ``_id`` values per shared key), which the driver must expose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.collection import Collection, Index
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.update import strict_key

_OPTIONS = ("hidden", "expireAfterSeconds", "prepareUnique", "unique")


def modify_index(collection: Collection, spec: Any) -> dict[str, Any]:
    """Apply collMod's ``index`` document to ``collection``; the reply's change fields."""
    if not isinstance(spec, Mapping):
        raise StoreError(14, "BSON field 'collMod.index' is the wrong type, expected type "
                             "'object'")
    unknown = [k for k in spec if k not in (*_OPTIONS, "keyPattern", "name")]
    if unknown:
        raise StoreError(40415, f"BSON field 'collMod.index.{unknown[0]}' is an unknown field.")
    index = _named_index(collection, spec)
    changes = [option for option in _OPTIONS if option in spec]
    if not changes:
        raise bad_value("no collMod index option specified")
    reply: dict[str, Any] = {}
    for option in changes:
        old, new = _change(collection, index, option, spec[option])
        if old != new:
            reply[f"{option}_old"] = old
        reply[f"{option}_new"] = new
    return reply


def _named_index(collection: Collection, spec: Mapping[str, Any]) -> Index:
    if "keyPattern" in spec:
        pattern = spec["keyPattern"]
        if not isinstance(pattern, Mapping):
            raise StoreError(14, "BSON field 'collMod.index.keyPattern' is the wrong type")
        found = [i for i in collection.indexes.values()
                 if strict_key(i.key) == strict_key(dict(pattern))]
        if not found:
            raise StoreError(27, f"cannot find index {dict(pattern)} for ns "
                                 f"{collection.namespace}")
        return found[0]
    name = spec.get("name")
    if name not in collection.indexes:
        raise StoreError(27, f"cannot find index {name} for ns {collection.namespace}")
    return collection.indexes[name]


def _change(collection: Collection, index: Index, option: str, value: Any) -> tuple[Any, Any]:
    """(old, new) of one option, after changing it."""
    if option == "expireAfterSeconds":
        old = index.spec.get("expireAfterSeconds")
        if old is None:
            raise StoreError(72, "no expireAfterSeconds field to update")
        index.spec["expireAfterSeconds"] = value
        return old, value
    if not isinstance(value, bool):
        raise StoreError(14, f"BSON field 'collMod.index.{option}' is the wrong type, "
                             "expected type 'bool'")
    if option == "hidden":
        if index is collection.id_index:
            raise bad_value("can't hide _id index")
        return _flag(index, "hidden", value)
    if option == "prepareUnique":
        if value and not index.unique:
            collection.track_keys(index)
        index.prepare_unique = value and not index.unique
        return _flag(index, "prepareUnique", value)
    return _make_unique(collection, index, value)


def _flag(index: Index, name: str, value: bool) -> tuple[bool, bool]:
    old = bool(index.spec.get(name, False))
    if value:
        index.spec[name] = True
    else:
        index.spec.pop(name, None)
    return old, value


def _make_unique(collection: Collection, index: Index, value: bool) -> tuple[bool, bool]:
    if not value:
        raise bad_value("The field 'unique' can only be set to true")
    if index.unique:
        return True, True
    if not index.prepare_unique:
        raise StoreError(72, "Index must be set 'prepareUnique' before it can be converted "
                             "to unique")
    shared = collection.track_keys(index)
    if shared:
        raise StoreError(359, "Cannot convert the index to unique. Please resolve conflicting "
                              "documents before running collMod again.",
                         extra={"violations": [{"ids": ids} for ids in shared.values()]})
    index.unique, index.prepare_unique = True, False
    index.spec.pop("prepareUnique", None)
    index.spec["unique"] = True
    return False, True
