"""The differences between PyMongo's AsyncMongoClient and asyncmongo.compat's that are kept
on purpose, each with its reason. docs/guides/migrating.md lists the same ones under
"Known differences from PyMongo"; a test checks that each listed step still differs, so the
table stays true.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: The properties of the client, databases and collections holding settings objects.
_SETTINGS = ("codec_options", "read_concern", "read_preference", "write_concern")


@dataclass(frozen=True)
class Deliberate:
    """One kept difference: what, why, and the steps (script, label, aspect) showing it."""

    what: str
    why: str
    steps: tuple[tuple[str, str, str], ...]


def _both(script: str, label: str) -> tuple[tuple[str, str, str], ...]:
    return ((script, label, "value"), (script, label, "class"))


def _missing(script: str, label: str) -> tuple[tuple[str, str, str], ...]:
    return ((script, label, "class"), (script, label, "error"))


DELIBERATE: tuple[Deliberate, ...] = (
    Deliberate(
        "Settings objects are asyncmongo's: `codec_options`, `read_concern`, "
        "`read_preference`, `write_concern` (client, database, collection), `client.options`, "
        "`client.topology_description`, `session.options`",
        "They are asyncmongo's frozen values with PyMongo's attribute names; every API takes "
        "PyMongo's objects as well, so passing them back and forth works. Converting them on "
        "every read would cost each operation a conversion.",
        (
            *(step for name in (*_SETTINGS, "options", "topology_description",
                                "get_database(options)") for step in _both("client_script", name)),
            *_both("database_script", "codec_options"),
            *(step for name in (*_SETTINGS[1:], "with_options")
              for step in _both("database_script", name)),
            *_both("collection_script", "codec_options"),
            *(step for name in _SETTINGS[1:] for step in _both("collection_script", name)),
            *_both("session_script", "options"),
        ),
    ),
    Deliberate(
        "One change stream class",
        "`watch()` on a client, database or collection returns `AsyncChangeStream`; PyMongo "
        "has a subclass per level (`AsyncClusterChangeStream`, ...). Their API is the same.",
        (
            ("client_script", "watch", "class"),
            ("database_script", "watch", "class"),
            ("collection_script", "watch", "class"),
            ("change_stream_script", "watch", "class"),
            ("change_stream_script", "watch(full_document_before_change)", "class"),
            ("change_stream_script", "database watch", "class"),
            ("change_stream_script", "client watch", "class"),
        ),
    ),
    Deliberate(
        "`client.eq_props()` is missing",
        "An undocumented helper of PyMongo's `__eq__`; clients compare equal as in PyMongo.",
        (
            ("client_script", "eq_props", "value"),
            *_missing("client_script", "eq_props"),
        ),
    ),
    Deliberate(
        "Keyword validation errors are ConfigurationError",
        "asyncmongo validates keyword options and URI options in one place and raises "
        "`ConfigurationError` for both; PyMongo raises ValueError or TypeError for keyword "
        "arguments.",
        (("client_context_script", "bad option", "error"),),
    ),
    Deliberate(
        "Per-operation raw results of a verbose `client.bulk_write` hold the counts only",
        "`raw_result` of each verbose UpdateResult/DeleteResult is `{n, nModified[, upserted]}`; "
        "PyMongo's also has the server's `ok` and `idx`, which say nothing the result does not.",
        (("client_script", "bulk_write(verbose)", "value"),),
    ),
    Deliberate(
        "Retryability of a mixed `bulk_write` is decided per batch",
        "A bulk that contains an UpdateMany or DeleteMany sends its insert and delete batches "
        "as retryable writes (with a txnNumber); PyMongo makes the whole bulk non-retryable. "
        "Each batch is its own command, and retrying a batch that is retryable is safe.",
        (("collection_script", "bulk_write", "commands"),),
    ),
    Deliberate(
        "A batch size of 1 is 1",
        "PyMongo turns a cursor batch size of 1 into 2 for its getMores (OP_QUERY closed a "
        "cursor after a batch of 1); asyncmongo sends 1, which the server honours.",
        (("collection_script", "aggregate(options)", "commands"),),
    ),
    Deliberate(
        "Unacknowledged batched writes carry `writeConcern: {w: 0}`",
        "An unacknowledged `insert_many` sends its write concern in the command as well as "
        "the moreToCome flag; PyMongo sends the flag only. The server replies to neither.",
        (("collection_script", "insert_many(w=0)", "commands"),),
    ),
    Deliberate(
        "`list_indexes()` yields dicts",
        "PyMongo decodes index documents as SON; asyncmongo uses the collection's "
        "document_class. Dicts keep key order and compare equal to SON.",
        (("collection_script", "list_indexes.to_list", "value"),),
    ),
    Deliberate(
        "No raw-batch cursors: `find_raw_batches`, `aggregate_raw_batches`",
        "asyncmongo has no raw-batch cursor; `find_raw_batches` raises InvalidOperation, "
        "`aggregate_raw_batches` is absent. Use `CodecOptions(document_class=RawBSONDocument)` "
        "for documents left as BSON.",
        (
            *_missing("collection_script", "find_raw_batches"),
            *_both("collection_script", "find_raw_batches.to_list"),
            ("collection_script", "find_raw_batches.to_list", "commands"),
            ("collection_script", "find_raw_batches.to_list", "error"),
            *_missing("collection_script", "aggregate_raw_batches"),
            ("collection_script", "aggregate_raw_batches", "commands"),
        ),
    ),
    Deliberate(
        "No exhaust cursors",
        "`find(cursor_type=CursorType.EXHAUST)` raises InvalidArgument: asyncmongo does not "
        "implement OP_MSG exhaust for find, and says so rather than reading batch by batch.",
        (
            *_both("cursor_script", "find(exhaust)"),
            ("cursor_script", "find(exhaust)", "commands"),
            ("cursor_script", "find(exhaust)", "error"),
        ),
    ),
    Deliberate(
        "No OP_QUERY flags on cursors: `add_option`, `remove_option`, `max_scan`",
        "They set legacy OP_QUERY wire flags and the maxScan option the server removed in "
        "4.2; asyncmongo sets cursor options by name (`cursor_type`, `no_cursor_timeout`, "
        "`allow_partial_results`).",
        (
            *_missing("cursor_script", "add_option"),
            *_missing("cursor_script", "remove_option"),
            *_missing("cursor_script", "max_scan"),
        ),
    ),
    Deliberate(
        "Cursors are not subscriptable",
        "`cursor[a:b]` and `cursor[i]` raise TypeError. PyMongo's AsyncCursor keeps the "
        "synchronous API's `__getitem__`: a slice sets skip and limit, an index raises "
        "IndexError (it cannot run a query without await). Use `skip(a).limit(b - a)`.",
        (
            ("cursor_script", "getitem", "error"),
            *_both("cursor_script", "getitem(slice)"),
            ("cursor_script", "getitem(slice)", "commands"),
            ("cursor_script", "getitem(slice)", "error"),
        ),
    ),
    Deliberate(
        "A command cursor's `cursor_id` and `GridIn.length` are ints",
        "PyMongo hands back an Int64 for both; Int64 is an int subclass, the value is the same. "
        "(A stored file's length is an Int64, as PyMongo writes it, and GridOut.length "
        "hands it back.)",
        (
            ("cursor_script", "command cursor.cursor_id", "class"),
            *_both("gridfs_script", "GridIn.length"),
        ),
    ),
    Deliberate(
        "Values the driver makes for itself are asyncmongo's bson classes",
        "`session.session_id` holds asyncmongo's Binary; cluster times and cursor ids in "
        "command monitoring events are asyncmongo's Timestamp and Int64. They encode "
        "identically; documents read from the server hold PyMongo's classes.",
        (("session_script", "session_id", "value"),),
    ),
    Deliberate(
        "Invalid cluster/operation times raise InvalidOperation",
        "`advance_cluster_time` / `advance_operation_time` with a value of the wrong type raise "
        "InvalidOperation (PyMongo: TypeError), as asyncmongo's own client does.",
        (
            ("session_script", "advance_cluster_time(bad)", "error"),
            ("session_script", "advance_operation_time(bad)", "error"),
        ),
    ),
    Deliberate(
        "The transaction context class is `TransactionContext`",
        "PyMongo's is the private `_TransactionContext`; both are async context managers.",
        (
            ("session_script", "start_transaction", "class"),
            ("session_script", "start_transaction(2)", "class"),
        ),
    ),
    Deliberate(
        "`session.bind()` is missing",
        "It binds the session to a context variable so operations pick it up implicitly; "
        "asyncmongo passes sessions explicitly (`session=`), never through a ContextVar.",
        _missing("session_script", "bind"),
    ),
    Deliberate(
        "GridFS uploads: index checks once per bucket, chunks in more inserts",
        "PyMongo queries the files and chunks collections before every upload to decide "
        "whether to create the indexes; asyncmongo does it on the bucket's first upload (and "
        "does not send the default `unique: false`). Chunks are inserted as the upload buffer "
        "fills, so a small file may take two inserts where PyMongo sends one.",
        (
            ("gridfs_script", "upload_from_stream", "commands"),
            ("gridfs_script", "upload_from_stream_with_id", "commands"),
            ("gridfs_script", "upload_from_stream(revision)", "commands"),
            ("gridfs_script", "GridIn write/close", "commands"),
            ("gridfs_script", "GridIn with id", "commands"),
            ("gridfs_script", "GridIn.writelines", "commands"),
            ("gridfs_script", "GridIn.close", "commands"),
            ("gridfs_script", "GridIn.write(abort)", "commands"),
            ("gridfs_script", "GridIn async with", "commands"),
        ),
    ),
    Deliberate(
        "GridFS filters on a file id as it is",
        "The files and chunks queries and deletes filter on `{_id: id}` / `{files_id: id}`, "
        "as the GridFS and retryable-reads spec tests expect; PyMongo wraps the id in `$eq`. "
        "For the ids the server accepts (no arrays, regexes or `$` fields) both match the same.",
        tuple(
            ("gridfs_script", label, "commands")
            for label in (
                "open_download_stream", "open_download_stream(missing)", "GridOut read",
                "GridOut read(by name)", "download_to_stream", "download_to_stream_by_name",
                "rename", "rename(missing)", "delete", "delete(missing)",
                "GridIn.abort", "GridOut.readline", "GridOut.read(rest)", "GridOut async for",
            )
        ),
    ),
    Deliberate(
        "GridFS by-name errors",
        "A missing file by name costs asyncmongo a second query, to say whether the name or "
        "only the revision is missing; `delete_by_name` of a missing name sends no deletes "
        "(PyMongo sends two that match nothing). Both raise NoFile.",
        (
            ("gridfs_script", "open_download_stream_by_name(missing)", "commands"),
            ("gridfs_script", "delete_by_name(missing)", "commands"),
        ),
    ),
    Deliberate(
        "`GridIn.abort()` deletes the chunks only",
        "The files document is written by `close()`, so an aborted upload has none; PyMongo "
        "also sends a delete for it.",
        (("gridfs_script", "GridIn.abort", "commands"),),
    ),
    Deliberate(
        "GridOut reuses its buffered chunk",
        "After a seek within the chunk it holds, a read continues from the buffer; PyMongo "
        "queries the chunks again.",
        (("gridfs_script", "GridOut.read(rest)", "commands"),),
    ),
    Deliberate(
        "GridFS stream misuse raises asyncmongo's errors",
        "Writing to a closed GridIn raises InvalidOperation (PyMongo: ValueError) and seeking "
        "before the start raises InvalidArgument (PyMongo: OSError), both PyMongoError "
        "subclasses under the compatible client.",
        (
            ("gridfs_script", "GridIn.write(closed)", "error"),
            ("gridfs_script", "GridOut.seek(bad)", "error"),
        ),
    ),
)

#: (script, step label, aspect) -> why asyncmongo differs there.
DELIBERATE_DIFFERENCES: Mapping[tuple[str, str, str], str] = {
    step: entry.what for entry in DELIBERATE for step in entry.steps
}
