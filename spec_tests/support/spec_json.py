"""Load a MongoDB spec test JSON file into Python values, Extended JSON included.

Every spec suite writes its BSON values as Extended JSON (``{"$oid": ...}``,
``{"$numberLong": "1"}``, ``{"$date": ...}``, ...). Runners want our BSON types, in the
file's key order, so they can encode commands and compare replies. This loader parses with
``object_pairs_hook`` and hands each object to :func:`asyncmongo.bson.json_util.object_hook`
in relaxed, legacy-tolerant mode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _pairs_hook(pairs: list[tuple[str, Any]]) -> Any:
    """Turn one parsed JSON object into a dict, or into its BSON type if it is a $-document."""
    document = dict(pairs)
    if not any(key.startswith("$") for key in document):
        return document
    try:
        from asyncmongo.bson import json_util
    except ImportError:
        # Extended JSON support has not landed yet: keep the raw $-document.
        return document
    return json_util.object_hook(document, json_util.SPEC_TEST_JSON_OPTIONS)


def loads_spec_json(text: str) -> Any:
    """Parse spec test JSON text, keeping key order and converting Extended JSON."""
    return json.loads(text, object_pairs_hook=_pairs_hook)


def load_spec_json(path: str | Path) -> Any:
    """Read a spec test JSON file, keeping key order and converting Extended JSON."""
    return loads_spec_json(Path(path).read_text(encoding="utf-8"))
