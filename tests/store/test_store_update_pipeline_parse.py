"""A pipeline-style update is parsed before any document is looked for, as mongod does: a bad
stage fails the command even when the filter matches nothing (command logging spec,
operation-id 'Failed bulk write command log message includes operationId')."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.testing.store import Store


@pytest.mark.parametrize(("stage", "code"), [({"$invalidOperator": True}, 40324),
                                             ({"$group": {"_id": None}}, 72)])
@pytest.mark.parametrize("command", ["update", "findAndModify"])
def test_a_bad_update_pipeline_fails_even_when_nothing_matches(
        stage: dict[str, Any], code: int, command: str) -> None:
    store = Store()
    if command == "update":
        request: dict[str, Any] = {"update": "c", "updates": [{"q": {"x": 1}, "u": [stage]}]}
    else:
        request = {"findAndModify": "c", "query": {"x": 1}, "update": [stage]}
    reply = store.handle("db", request)
    # the whole command fails (ok: 0), as mongod parses the pipeline with the command
    assert not reply["ok"] and reply["code"] == code, reply


def test_a_valid_update_pipeline_matching_nothing_succeeds() -> None:
    reply = Store().handle("db", {"update": "c", "updates": [{"q": {"x": 1},
                                                              "u": [{"$set": {"y": 1}}]}]})
    assert reply["ok"] and reply["n"] == 0 and "writeErrors" not in reply
