"""Document metadata (mongod's ``$meta``): the text score a ``$text`` query computes.

A score travels with its document through a find or a pipeline under :data:`TEXT_SCORE`, a
field name no BSON document can have (it holds a NUL), so stages that copy documents keep it
as mongod keeps metadata; :func:`strip_scores` removes it before results leave the store.
Other ``$meta`` keywords are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.errors import StoreError

TEXT_SCORE = "\x00textScore"
Document = dict[str, Any]
_KNOWN = frozenset({"textScore", "randVal", "searchScore", "searchHighlights", "indexKey",
                    "recordId", "sortKey", "geoNearDistance", "geoNearPoint", "searchScoreDetails",
                    "searchSequenceToken", "vectorSearchScore", "score", "scoreDetails"})


def check_meta(argument: Any) -> None:
    """A ``$meta`` argument: "textScore" is served, any other keyword is refused by name."""
    if not isinstance(argument, str) or argument not in _KNOWN:
        raise StoreError(17308, f"Unsupported argument to $meta: {argument}")
    if argument != "textScore":
        raise StoreError(17308, f"$meta: \"{argument}\" is not supported by asyncmongo.testing "
                                "(only \"textScore\")")


def meta_score(document: Any) -> float:
    """``{$meta: "textScore"}``: mongod fails when the query did not compute one."""
    score = document.get(TEXT_SCORE) if isinstance(document, Mapping) else None
    if not isinstance(score, float):
        raise StoreError(40218, "query requires text score metadata, but it is not available")
    return score


def keep_score(source: Mapping[str, Any], result: Document) -> Document:
    """``result`` (a reshaped ``source``) keeping the source's score, as mongod keeps
    metadata through $project."""
    if TEXT_SCORE in source and TEXT_SCORE not in result:
        result[TEXT_SCORE] = source[TEXT_SCORE]
    return result


def strip_scores(value: Any) -> Any:
    """``value`` without score metadata anywhere in it (for results leaving the store)."""
    if isinstance(value, dict):
        return {k: strip_scores(v) for k, v in value.items() if k != TEXT_SCORE}
    if isinstance(value, list):
        return [strip_scores(v) for v in value]
    return value
