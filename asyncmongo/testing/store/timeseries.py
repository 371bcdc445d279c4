"""Time series collections: ``create`` with ``timeseries: {timeField, metaField, granularity}``.

What the store reproduces of mongod 8.0: the options are validated and listed as mongod
lists them (``granularity`` defaults to "seconds", ``bucketMaxSpanSeconds`` filled in from
it), listCollections says ``type: "timeseries"``, there is no ``_id`` index (so two
measurements may share an ``_id``), a collection with a ``metaField`` gets mongod's default
``{meta: 1, time: 1}`` index, and every measurement needs a date in its ``timeField``. The
measurements are kept as inserted (no buckets, no system.buckets namespace).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.collection import Collection, Document, Index
from asyncmongo.testing.store.compare import integral
from asyncmongo.testing.store.errors import StoreError, bad_value

#: granularity -> bucketMaxSpanSeconds (mongod's defaults).
_MAX_SPAN: dict[str, int] = {"seconds": 3600, "minutes": 86400, "hours": 2592000}
_FIELDS = frozenset({"timeField", "metaField", "granularity", "bucketMaxSpanSeconds",
                     "bucketRoundingSeconds"})


def timeseries_options(spec: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``timeseries`` option as mongod stores and lists it (validated)."""
    if not isinstance(spec, Mapping):
        raise StoreError(14, "BSON field 'create.timeseries' is the wrong type, expected "
                             "type 'object'")
    for name in spec:
        if name not in _FIELDS:
            raise StoreError(40415, f"BSON field 'create.timeseries.{name}' is an unknown field.")
    time_field = spec.get("timeField")
    if "timeField" not in spec:
        raise StoreError(40414, "BSON field 'create.timeseries.timeField' is missing but a "
                                "required field")
    _check_field_name("timeField", time_field)
    meta_field = spec.get("metaField")
    if meta_field is not None:
        _check_field_name("metaField", meta_field)
        if meta_field == time_field:
            raise StoreError(72, "The 'metaField' and 'timeField' options must be different")
    for option in ("capped", "viewOn", "clusteredIndex"):
        if option in options:
            raise StoreError(72, f"Time-series collections do not support the '{option}' "
                                 "option")
    listed: dict[str, Any] = {"timeField": time_field}
    if meta_field is not None:
        listed["metaField"] = meta_field
    listed.update(_bucketing(spec))
    return listed


def _check_field_name(option: str, value: Any) -> None:
    if not isinstance(value, str):
        raise StoreError(14, f"BSON field 'create.timeseries.{option}' is the wrong type, "
                             "expected type 'string'")
    if not value or "." in value or value.startswith("$"):
        raise bad_value(f"The {option} '{value}' must be a top-level field name that does "
                        "not start with '$'")


def _bucketing(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``granularity`` (default seconds) with its span, or the two custom bucket options."""
    span, rounding = spec.get("bucketMaxSpanSeconds"), spec.get("bucketRoundingSeconds")
    if span is None and rounding is None:
        granularity = spec.get("granularity", "seconds")
        if granularity not in _MAX_SPAN:
            raise bad_value(f"Enumeration value '{granularity}' for field "
                            "'timeseries.granularity' is not a valid value.")
        return {"granularity": granularity, "bucketMaxSpanSeconds": _MAX_SPAN[granularity]}
    if "granularity" in spec:
        raise StoreError(72, "Time-series 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' "
                             "cannot be set with 'granularity'")
    whole_span, whole_rounding = integral(span), integral(rounding)
    if whole_span is None or whole_rounding is None or whole_span != whole_rounding:
        raise StoreError(72, "Time-series 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' "
                             "fields must be present together and must be equal")
    if not 1 <= whole_span <= 31_536_000:
        raise StoreError(72, "Time-series 'bucketMaxSpanSeconds' must be between 1 and "
                             "31536000")
    return {"bucketRoundingSeconds": whole_rounding, "bucketMaxSpanSeconds": whole_span}


def set_up(collection: Collection) -> None:
    """Replace the new collection's ``_id`` index by mongod's time series indexes: none, or
    ``{metaField: 1, timeField: 1}`` when there is a metaField."""
    spec = collection.options["timeseries"]
    collection.indexes.clear()
    meta_field = spec.get("metaField")
    if meta_field is not None:
        key = {meta_field: 1, spec["timeField"]: 1}
        name = f"{meta_field}_1_{spec['timeField']}_1"
        collection.indexes[name] = Index(name, key, spec={"v": 2, "key": key, "name": name})


def check_measurement(collection: Collection, document: Document) -> None:
    """A measurement needs a date in the timeField (mongod: BadValue on insert)."""
    time_field = collection.options["timeseries"]["timeField"]
    if not isinstance(document.get(time_field), datetime.datetime):
        raise bad_value(f"'{time_field}' must be present and contain a valid BSON UTC "
                        "datetime value")


def timeseries_info(collection: Collection) -> dict[str, Any]:
    """The listCollections entry of a time series collection (no uuid, no idIndex: mongod
    lists the view over its buckets)."""
    return {"name": collection.name, "type": "timeseries", "options": dict(collection.options),
            "info": {"readOnly": False}}
