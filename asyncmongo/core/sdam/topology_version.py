"""topologyVersion: the server's (processId, counter) freshness stamp (MongoDB 4.4+).

SDAM uses it to drop hello replies and state-change errors that are older than what the
client already knows ("topologyVersion Comparison").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class TopologyVersion:
    """``{processId: ObjectId, counter: int64}`` from a hello reply or a state-change error."""

    process_id: ObjectId
    counter: int

    @classmethod
    def from_document(cls, document: Any) -> TopologyVersion | None:
        """Parse the reply's ``topologyVersion`` field; None when absent."""
        if document is None:
            return None
        if not isinstance(document, Mapping):
            raise ProtocolError(f"topologyVersion must be a document, not {document!r}")
        process_id, counter = document.get("processId"), document.get("counter")
        if not isinstance(process_id, ObjectId) or not isinstance(counter, int):
            raise ProtocolError(f"malformed topologyVersion: {document!r}")
        return cls(process_id, int(counter))

    def to_document(self) -> dict[str, Any]:
        """The document form, as sent back in a streaming hello."""
        return {"processId": self.process_id, "counter": self.counter}


def compare_topology_version(
    current: TopologyVersion | None, incoming: TopologyVersion | None
) -> int:
    """-1, 0 or 1 as ``current`` is older than, equal to or newer than ``incoming``.

    SDAM: a missing version or a different processId means "assume the incoming one is newer".
    """
    if current is None or incoming is None or current.process_id != incoming.process_id:
        return -1
    if current.counter == incoming.counter:
        return 0
    return -1 if current.counter < incoming.counter else 1
