"""``renameCollection`` (on admin, with full namespaces), as mongod runs it.

The collection keeps its documents, indexes and UUID under the new name; with
``dropTarget`` an existing target is dropped first (its UUID is in the rename event's
``operationDescription.dropTarget``), without it an existing target is 48 NamespaceExists.
Change streams see one ``rename`` event (which invalidates a stream on the old name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.change_events import ChangeLog
from asyncmongo.testing.store.context import CommandContext
from asyncmongo.testing.store.database import Catalog, check_collection_name, check_database_name
from asyncmongo.testing.store.errors import StoreError


def _namespace(value: Any, field: str) -> tuple[str, str]:
    if not isinstance(value, str) or "." not in value:
        raise StoreError(73, f"Invalid {field} namespace: {value!r}")
    db_name, name = value.split(".", 1)
    return check_database_name(db_name), check_collection_name(db_name, name)


def rename_collection(ctx: CommandContext, command: Mapping[str, Any], catalog: Catalog,
                      log: ChangeLog | None) -> dict[str, Any]:
    """Move a collection to another name (admin command)."""
    if ctx.db_name != "admin":
        raise StoreError(13, "renameCollection may only be run against the admin database.")
    if ctx.in_transaction:
        raise StoreError(263, "Cannot run 'renameCollection' in a multi-document transaction.")
    source_db, source = _namespace(command.get("renameCollection"), "source")
    target_db, target = _namespace(command.get("to"), "target")
    collection = catalog.get(source_db, source)
    if collection is None:
        raise StoreError(26, f"Source collection {source_db}.{source} does not exist")
    if collection.is_view:
        # mongod's renameCollection: a view is not renamed (drop and create it instead)
        raise StoreError(166, f"cannot rename view: {source_db}.{source}")
    if (source_db, source) == (target_db, target):
        raise StoreError(20, "Can't rename a collection to itself")
    existing = catalog.get(target_db, target)
    drop_target = command.get("dropTarget")
    if existing is not None and not drop_target:
        raise StoreError(48, "target namespace exists")
    for db_name, name in ((source_db, source), (target_db, target)):
        if catalog.before_change is not None:
            catalog.before_change(db_name, name)
    ctx.cursors.kill_namespace(f"{source_db}.{source}")
    if existing is not None:
        ctx.cursors.kill_namespace(f"{target_db}.{target}")
    databases = catalog.databases
    del databases[source_db][source]
    if not databases[source_db]:
        del databases[source_db]
    collection.db_name, collection.name = target_db, target
    databases.setdefault(target_db, {})[target] = collection
    if log is not None:
        to = {"db": target_db, "coll": target}
        description: dict[str, Any] = {"to": to}
        if existing is not None:
            description["dropTarget"] = existing.uuid
        log.record("rename", source_db, source, uuid=collection.uuid,
                   extra={"to": to, "operationDescription": description})
    return {"ok": 1.0}
