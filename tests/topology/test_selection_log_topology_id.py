"""Server selection log messages name the selecting client's topology (``topologyId``, as the
SDAM messages do), so two clients in one process can tell their selections apart: the unified
runner credits each message to the client whose topology wrote it."""

from __future__ import annotations

import logging

import pytest

from asyncmongo.bson import ObjectId
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.monitoring.selection_log import SelectionLog, selection_message


class _Topology:
    def __init__(self, description: TopologyDescription) -> None:
        self.topology_id = ObjectId()
        self.description = description


def test_selection_message_carries_the_topology_id() -> None:
    ident = ObjectId()
    message = selection_message("Server selection started", "find", "a read", "<topology>",
                                operation_id=3, topology_id=ident)
    assert message.fields["topologyId"] == str(ident)
    assert message.fields["operationId"] == 3
    assert "topologyId" not in selection_message("m", "find", "s", "t").fields


def test_each_topology_logs_its_own_id(caplog: pytest.LogCaptureFixture) -> None:
    first = _Topology(TopologyDescription.initial(TopologySettings((("a", 27017),))))
    second = _Topology(first.description)
    caplog.set_level(logging.DEBUG, logger="asyncmongo.serverSelection")
    SelectionLog(first, "insert", "a write", 1)("Server selection started")
    SelectionLog(second, "find", "a read", 2)("Server selection started")
    ids = [getattr(record.msg, "fields", {}).get("topologyId") for record in caplog.records]
    assert ids == [str(first.topology_id), str(second.topology_id)]

