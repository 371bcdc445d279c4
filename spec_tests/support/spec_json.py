"""Load a MongoDB spec test JSON file into Python values, Extended JSON included.

Every spec suite writes its BSON values as Extended JSON (``{"$oid": ...}``,
``{"$numberLong": "1"}``, ``{"$date": ...}``, ...). Runners want our BSON types, in the
file's key order, so they can encode commands and compare replies. This loader reads a file
with :func:`asyncmongo.bson.json_util.loads` in relaxed mode with the legacy forms accepted
(:data:`SPEC_JSON_OPTIONS`), so values come out exactly as the BSON decoder's defaults give
them: ``{"$numberLong": "1"}`` is ``Int64(1)``, a relaxed ``1`` is ``int``, subtype-0 binary
is ``bytes``, ``$date`` a naive UTC datetime (a :class:`DatetimeMS` outside datetime's
range), ``$uuid`` a ``Binary`` of subtype 4. Query operators (``{"$gt": 1}``, ``{"$type":
"null"}``, ``{"$$exists": true}``) stay plain dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from asyncmongo.bson.json_util import JSONMode, JSONOptions, loads
from asyncmongo.bson.types import DatetimeConversion

__all__ = ["SPEC_JSON_OPTIONS", "load_spec_json", "loads_spec_json"]

SPEC_JSON_OPTIONS: Final = JSONOptions(
    json_mode=JSONMode.RELAXED,
    accept_legacy=True,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)


def loads_spec_json(text: str | bytes) -> Any:
    """Parse spec test JSON text, keeping key order and converting Extended JSON."""
    return loads(text, SPEC_JSON_OPTIONS)


def load_spec_json(path: str | Path) -> Any:
    """Read a spec test JSON file, keeping key order and converting Extended JSON."""
    return loads_spec_json(Path(path).read_bytes())
