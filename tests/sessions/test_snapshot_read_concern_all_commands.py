"""Snapshot sessions spec, "Sending readConcern to the server on all commands": every command
of a snapshot session carries readConcern {level: snapshot} (writes and list commands too, so
the server refuses them), except the cursor commands of a cursor the session already opened."""

from __future__ import annotations

import pytest

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.sessions.decorate import SessionFields, decorate

LSID = {"id": b"0" * 16}


@pytest.mark.parametrize("command", [
    {"insert": "c", "documents": [{}]}, {"update": "c", "updates": []},
    {"delete": "c", "deletes": []}, {"findAndModify": "c"}, {"listDatabases": 1},
    {"listCollections": 1}, {"listIndexes": "c"}, {"find": "c"}, {"aggregate": "c"},
])
def test_every_command_of_a_snapshot_session_carries_the_snapshot_read_concern(
        command: dict[str, object]) -> None:
    fields = SessionFields(lsid=LSID, snapshot=True)
    assert decorate(command, fields)["readConcern"] == {"level": "snapshot"}
    timed = SessionFields(lsid=LSID, snapshot=True, snapshot_time=Timestamp(7, 1))
    assert decorate(command, timed)["readConcern"] == {"level": "snapshot",
                                                       "atClusterTime": Timestamp(7, 1)}


@pytest.mark.parametrize("command", [{"getMore": 1, "collection": "c"},
                                     {"killCursors": "c", "cursors": [1]}])
def test_cursor_commands_of_a_snapshot_session_carry_no_read_concern(
        command: dict[str, object]) -> None:
    fields = SessionFields(lsid=LSID, snapshot=True, snapshot_time=Timestamp(7, 1))
    assert "readConcern" not in decorate(command, fields)


def test_a_plain_session_adds_no_read_concern_to_writes_or_list_commands() -> None:
    for command in ({"insert": "c"}, {"listCollections": 1}):
        assert "readConcern" not in decorate(command, SessionFields(lsid=LSID))
