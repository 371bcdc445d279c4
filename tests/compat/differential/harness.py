"""Run one script through two clients and record what each did, step by step.

A script is an ``async def script(run: Run) -> None`` calling API methods through
``await run.step(label, call)``. Each script runs twice against the same simulated
deployment, once through PyMongo's ``AsyncMongoClient`` and once through
``asyncmongo.compat.AsyncMongoClient``, each in a database of its own. For every step the
:class:`Run` records a :class:`Step`: the returned value (normalised, see :func:`normalise`),
the result's class, the raised error and the commands sent while the step ran (see
:func:`significant_command`). :func:`compare` then lists where the two records differ.
"""

from __future__ import annotations

import datetime
import inspect
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import bson
import bson.raw_bson
import gridfs
import pymongo
import pymongo.results
from pymongo import monitoring

import asyncmongo.bson
from asyncmongo import compat

#: Command fields whose value differs per run; only their presence is compared.
COMMAND_FIELDS_PRESENT_ONLY: Mapping[str, str] = {
    "lsid": "a session id is random per session",
    "txnNumber": "counts the session's transactions; the sessions differ per run",
    "$clusterTime": "the cluster time gossiped back depends on when the step ran",
    "getMore": "a cursor id the server chose",
    "cursors": "cursor ids the server chose (killCursors)",
}

#: Command fields compared only when they differ from the server's default: PyMongo spells
#: out ``multi: false`` and ``upsert: false`` in update statements, ``new: false`` and
#: ``upsert: false`` in findAndModify, and find's returnKey/showRecordId when given false;
#: asyncmongo leaves the server to apply its defaults.
COMMAND_FIELDS_IF_TRUE: Mapping[str, str] = {
    "multi": "false is the server's default for an update statement",
    "upsert": "false is the server's default (update statements, findAndModify)",
    "new": "false is the server's default for findAndModify",
    "returnKey": "false is the server's default for find (PyMongo sends it when given)",
    "showRecordId": "false is the server's default for find (PyMongo sends it when given)",
}

#: Fields inside commands that differ per run (at any depth).
RESUME_TOKEN_FIELDS: Mapping[str, str] = {
    "_data": "a change stream's resume token (resumeAfter, startAfter) encodes the clock",
}

#: Command fields compared only when not null: PyMongo sends ``comment: null`` when no
#: comment was given, which the server treats as no comment.
COMMAND_FIELDS_IF_SET: Mapping[str, str] = {
    "comment": "PyMongo sends null for no comment; the server reads null as absent",
}

#: Command fields not compared at all, with why.
COMMAND_FIELDS_IGNORED: Mapping[str, str] = {
    "$readPreference": (
        "whether primary is sent is driver-specific (the server applies primary when it is "
        "absent, and ignores it on a standalone)"
    ),
}

#: Reply fields (in values that commands return) that differ per run or per connection.
REPLY_FIELDS_PRESENT_ONLY: Mapping[str, str] = {
    "$clusterTime": "the server's clock",
    "operationTime": "the server's clock",
    "localTime": "the server's clock",
    "connectionId": "a counter per connection the server accepted, both drivers sharing it",
    "electionId": "an ObjectId",
    "lastWrite": "the server's clock",
    "opTime": "the server's clock",
    "_data": "a change stream's resume token encodes the server's clock",
}

#: The attributes recorded for PyMongo's result classes (what the result says).
_RESULT_FIELDS: Mapping[type, tuple[str, ...]] = {
    pymongo.results.InsertOneResult: ("inserted_id", "acknowledged"),
    pymongo.results.InsertManyResult: ("inserted_ids", "acknowledged"),
    pymongo.results.UpdateResult: (
        "matched_count", "modified_count", "upserted_id", "raw_result", "acknowledged",
    ),
    pymongo.results.DeleteResult: ("deleted_count", "raw_result", "acknowledged"),
    pymongo.results.BulkWriteResult: ("bulk_api_result", "acknowledged"),
    pymongo.results.ClientBulkWriteResult: (
        "bulk_api_result", "acknowledged", "has_verbose_results",
    ),
}

#: Modules of API classes: their objects are compared by class name only, since PyMongo's
#: and the compatible client's classes live in different modules by design.
_API_MODULES = ("pymongo.asynchronous.", "gridfs.asynchronous.", "asyncmongo.compat")

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")

_VOLATILE_LEAVES = (bson.ObjectId, bson.Timestamp, datetime.datetime, uuid.UUID)


def class_name(value: Any) -> str:
    """The name compared for ``value``'s class: module and name, except for API objects."""
    cls = type(value)
    if cls.__module__.startswith(_API_MODULES):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


#: bson type markers (PyMongo's ``_type_marker`` protocol, which asyncmongo's classes follow
#: too) of the values in command documents: events carry each driver's own classes.
_MARKER_PLACEHOLDERS = {7: "<ObjectId>", 17: "<Timestamp>"}


#: asyncmongo's own classes, which have no type marker, by name.
_MARKERS_BY_NAME = {"ObjectId": 7, "Binary": 5, "Timestamp": 17, "Int64": 18}


def _untyped_leaf(value: Any) -> Any:
    marker = getattr(value, "_type_marker", None)
    if marker is None and type(value).__module__.startswith("asyncmongo.bson"):
        marker = _MARKERS_BY_NAME.get(type(value).__name__)
    if marker in _MARKER_PLACEHOLDERS:
        return _MARKER_PLACEHOLDERS[marker]
    if marker == 18:  # Int64 is an int on the wire either way
        return int(value)
    if marker == 5 and value.subtype in (3, 4):
        return "<Binary>"
    if marker == 5:
        return ("Binary", bytes(value), value.subtype)
    return value


def _leaf(value: Any, db_name: str, typed: bool) -> Any:
    if not typed:
        value = _untyped_leaf(value)
    if isinstance(value, _VOLATILE_LEAVES) or (
        isinstance(value, bson.Binary) and value.subtype in (3, 4)
    ):
        placeholder = f"<{type(value).__name__}>"
        return (placeholder, class_name(value)) if typed else placeholder
    if isinstance(value, str):
        return value.replace(db_name, "DB")
    if typed and not isinstance(value, bool | int | float | bytes | type(None)):
        return (_ADDRESS.sub("", repr(value)), class_name(value))
    if typed and isinstance(value, int) and not isinstance(value, bool):
        return (value, class_name(value))  # Int64 against int
    return value


def normalise(value: Any, db_name: str, *, typed: bool = True, reply: bool = True) -> Any:
    """``value`` with what differs per run replaced (ObjectIds, timestamps, datetimes,
    UUIDs, the run's database name, the volatile reply fields), and, when ``typed``, the
    class of every document and bson value kept beside it."""
    if type(value) in _RESULT_FIELDS or isinstance(value, _grid_out_classes()):
        return _described(value, db_name)
    if isinstance(value, bson.raw_bson.RawBSONDocument):
        inner = normalise(dict(value.items()), db_name, typed=typed, reply=reply)
        return (inner, class_name(value)) if typed else inner
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            if reply and key in REPLY_FIELDS_PRESENT_ONLY:
                items[key] = "<present>"
            else:
                items[key] = normalise(item, db_name, typed=typed, reply=reply)
        return (items, class_name(value)) if typed else items
    if isinstance(value, list | tuple):
        inner_list = [normalise(item, db_name, typed=typed, reply=reply) for item in value]
        return (inner_list, class_name(value)) if typed else inner_list
    if isinstance(value, set | frozenset):
        return sorted(repr(normalise(item, db_name, typed=typed)) for item in value)
    return _leaf(value, db_name, typed)


def _described(value: Any, db_name: str) -> Any:
    """What is compared of a step's result."""
    fields = _RESULT_FIELDS.get(type(value))
    if fields is not None:
        return {name: _attribute(value, name, db_name) for name in fields}
    if isinstance(value, _grid_out_classes()):
        return {
            name: normalise(getattr(value, name), db_name)
            for name in ("filename", "length", "chunk_size", "metadata")
        }
    if type(value).__module__.startswith(_API_MODULES):
        for attribute in ("full_name", "name", "filename"):
            name = getattr(value, attribute, None)
            if isinstance(name, str):
                return name.replace(db_name, "DB")
        return None
    return normalise(value, db_name)


def _attribute(value: Any, name: str, db_name: str) -> Any:
    """An attribute of a result, or the class of the error reading it raises (the counts of
    an unacknowledged write)."""
    try:
        return normalise(getattr(value, name), db_name)
    except Exception as exc:  # the error's class is what is compared
        return f"<raises {type(exc).__name__}>"


def _grid_out_classes() -> tuple[type, ...]:
    from asyncmongo.gridfs.grid_out import AsyncGridOut

    return (gridfs.asynchronous.grid_file.AsyncGridOut, AsyncGridOut)


def significant_command(event: monitoring.CommandStartedEvent, db_name: str) -> Any:
    """The command as compared: the fields above ignored or reduced to their presence."""
    command = {}
    for key, value in event.command.items():
        if key in COMMAND_FIELDS_IGNORED or (key in COMMAND_FIELDS_IF_SET and value is None):
            continue
        command[key] = "<present>" if key in COMMAND_FIELDS_PRESENT_ONLY else value
    # Each driver's event holds its own classes (PyMongo's the caller's objects, asyncmongo's
    # its own bson classes for what it decoded or made): compare what goes on the wire, as
    # PyMongo decodes it.
    wire = bson.decode(asyncmongo.bson.encode(command))
    return _without_defaults(normalise(wire, db_name, typed=False, reply=False))


def _without_defaults(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: "<present>" if key in RESUME_TOKEN_FIELDS else _without_defaults(item)
            for key, item in value.items()
            if not (key in COMMAND_FIELDS_IF_TRUE and item is False)
        }
    if isinstance(value, list):
        return [_without_defaults(item) for item in value]
    return value


class CommandRecorder(monitoring.CommandListener):
    """PyMongo's listener class (the compatible client accepts PyMongo's listeners)."""

    def __init__(self) -> None:
        self.events: list[monitoring.CommandStartedEvent] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.events.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@dataclass
class Step:
    """What one API call did."""

    label: str
    value: Any = None
    value_class: str | None = None
    error: BaseException | None = None
    commands: list[Any] = field(default_factory=list)


class Run:
    """One run of a script through one client, in a database of its own."""

    def __init__(self, kind: str, uri: str, script_name: str, **client_options: Any) -> None:
        self.kind = kind
        self.uri = uri
        self.db_name = f"diff_{script_name}_{kind}"
        self.recorder = CommandRecorder()
        self.client_options = client_options
        self.steps: list[Step] = []

    @property
    def client_class(self) -> type:
        return pymongo.AsyncMongoClient if self.kind == "pymongo" else compat.AsyncMongoClient

    @property
    def gridfs_bucket_class(self) -> type:
        return gridfs.AsyncGridFSBucket if self.kind == "pymongo" else compat.AsyncGridFSBucket

    def new_client(self, **options: Any) -> Any:
        """A client of this run's kind, recording its commands."""
        merged = {**self.client_options, **options}
        return self.client_class(self.uri, event_listeners=[self.recorder], **merged)

    async def step(self, label: str, call: Callable[[], Any], *, volatile: bool = False) -> Any:
        """Call ``call`` (awaiting what it returns if awaitable) and record the step; the
        result, or None if it raised. A ``volatile`` result (a cursor id, a time) differs
        per run: only its class is compared."""
        step = Step(label)
        first_event = len(self.recorder.events)
        result = None
        try:
            result = call()
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # every error is compared
            step.error = exc
            result = None
        else:
            step.value = None if volatile else _described(result, self.db_name)
            step.value_class = class_name(result)
        step.commands = [
            (event.command_name, significant_command(event, self.db_name))
            for event in self.recorder.events[first_event:]
        ]
        self.steps.append(step)
        return result


def _error_summary(error: BaseException | None) -> Any:
    if error is None:
        return None
    return (type(error).__name__, getattr(error, "code", None))


def _same_error(want: BaseException | None, got: BaseException | None) -> bool:
    """The compatible client's error is an instance of the class PyMongo raised, with the
    same code (or neither raised)."""
    if want is None or got is None:
        return want is got
    return isinstance(got, type(want)) and getattr(want, "code", None) == getattr(
        got, "code", None
    )


def compare(
    script: str, expected: Run, actual: Run, deliberate: Mapping[tuple[str, str, str], str]
) -> list[str]:
    """The differences between PyMongo's run (``expected``) and the compatible client's,
    except those listed as deliberate (keyed by script, step label and aspect); a listed
    step that no longer differs is reported too, so the list stays true."""
    labels = [s.label for s in expected.steps], [s.label for s in actual.steps]
    if labels[0] != labels[1]:
        return [f"{script}: the steps differ: {labels[0]} != {labels[1]}"]
    differences: list[str] = []
    for want, got in zip(expected.steps, actual.steps, strict=True):
        aspects = {
            "value": (want.value == got.value, want.value, got.value),
            "class": (want.value_class == got.value_class, want.value_class, got.value_class),
            "commands": (want.commands == got.commands, want.commands, got.commands),
            "error": (
                _same_error(want.error, got.error),
                _error_summary(want.error),
                _error_summary(got.error),
            ),
        }
        both_raised = want.error is not None and got.error is not None
        for aspect, (equal, a, b) in aspects.items():
            listed = (script, want.label, aspect) in deliberate
            if listed and equal and not (both_raised and aspect != "error"):
                differences.append(
                    f"{script} / {want.label} / {aspect}: listed as deliberate but the same"
                )
            elif not listed and not equal:
                differences.append(
                    f"{script} / {want.label} / {aspect}:\n  pymongo: {a!r}\n  compat:  {b!r}"
                )
    return differences
