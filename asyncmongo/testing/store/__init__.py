"""An in-memory MongoDB document store: command documents in, reply documents out.

The simulated deployment (``asyncmongo.testing``) puts its wire protocol in front of
:class:`Store`: ``Store().handle("db", {"find": "coll", "filter": {...}})`` returns the reply
document a MongoDB server would send. Plain Python, no asyncio, no sockets.

Modules: ``compare`` (BSON order), ``paths`` (dotted paths), ``matcher`` (query operators),
``expressions`` (aggregation expressions), ``update`` (update operators), ``projection``,
``sorting``, ``aggregate`` (pipelines), ``collection``/``database`` (documents, unique indexes,
the catalog), ``cursors``, ``crud``/``admin`` (the commands), ``client_bulk`` (8.0's admin
``bulkWrite``), ``transactions`` (sessions, transactions, retryable writes), ``snapshots``
(snapshot reads' bounded history by cluster time), ``local_sessions`` (the session cache
``$listLocalSessions`` lists), ``search_indexes`` (Atlas search index commands and
``$listSearchIndexes``, refused with SearchNotEnabled as by a mongod without Atlas Search),
``collation``,
``validation`` (validators), ``where`` (the
``$where`` scripts without JavaScript; their ``sleep`` is awaited by the server front end) and
``commands`` (``Store``, the routing); ``views``, ``timeseries``, ``tailable`` (capped
collections' tailable cursors), ``plan`` (the index behind ``returnKey``), ``index_changes``
(collMod's ``index``), ``coll_stats`` (``$collStats``), ``change_events`` (the change log every
committed write feeds), ``change_streams`` (``$changeStream`` cursors over it) and ``rename``
(``renameCollection``), ``text_index``/``text_search``/``metadata`` (text indexes, ``$text``
and ``{$meta: "textScore"}``), ``joins`` (``$unionWith``, ``$graphLookup``), ``known_fields``
(the command fields mongod's parsers accept) and ``unsupported`` (mongod features the store
refuses by name; docs/guides/testing.md lists what is supported).

Simplifications (deliberate): collation approximated (strengths 1-3 by Unicode case folding
and accent stripping, not ICU tables; no collection default collation), no geo queries, text
search stemmed in English and "none" only (other languages refused by name:
``text_search``), no
``$jsonSchema``, ``$where`` limited to the scripts the spec tests send (``sleep(N) || true``,
``function() { sleep(N); return true; }``: see ``where``; other JavaScript is BadValue),
views evaluated at every read and time series kept as plain measurements (no system.views or
system.buckets namespaces), ``$merge`` without pipelines, batches cut near 16 MiB by an
estimate (not the exact BSON size), no write concern or read concern semantics (the server
front end handles them) except snapshot reads, which see a snapshot retained when a read first
named its cluster time (an older time nobody read at is SnapshotTooOld), and a plain write
to a document that an open transaction has written fails with 112 WriteConflict instead of
waiting for the transaction to end. Transactions read
a snapshot as of their first command. Retryable writes are remembered per command (lsid +
txnNumber), not per statement.

Differences from jongodb (tests/store/test_store_vs_jongodb.py compares random filters and
updates; MongoDB's documented behaviour, pinned in tests/store/test_store_semantics.py, is
what the store does in each case):

- jongodb treats an int and a double of the same value as unequal (3 != 3.0); MongoDB
  compares numbers by value across int, long, double and decimal.
- jongodb's $gt/$gte/$lt/$lte with a document or array operand match nothing; MongoDB
  compares documents and arrays in BSON order (same type bracket only).
- jongodb's $all matches only array fields and never null/missing; MongoDB treats
  ``{$all: [v]}`` as ``$and`` of equalities (``{a: {$all: [1]}}`` matches ``{a: 1}``).
- jongodb's $mod does not truncate doubles and reaches into nested arrays; MongoDB truncates
  the dividend toward zero and expands one array level only.
- jongodb's $lte/$gte null and $nin [null] ignore that null also matches a missing field.
- jongodb's $regex reaches into nested arrays; MongoDB expands one array level only.
- jongodb's equality with an array value (``{a: []}``) does not match an array element that is
  that array (``{a: [[], 1]}``); MongoDB does.
- jongodb implements only the $set, $unset, $inc, $addToSet and $setOnInsert update
  operators ($mul $min $max $rename $push $pop $pull $pullAll $currentDate are "unsupported
  update operator"); the store's versions are covered by unit tests only.
- jongodb's $unset of an array element (``b.0``) leaves the array unchanged; MongoDB sets the
  element to null.
- jongodb refuses to update a path through an array index (``a.1``); MongoDB pads or updates
  the element.
- jongodb's $inc wraps around on int32 overflow; MongoDB promotes the result to a long.
- jongodb closes the connection on some updates (``$addToSet`` of null, or on ``b.0`` when
  ``b`` is a document) instead of answering.
- Error codes: where both fail, jongodb often reports its own codes (14 for most update errors,
  238 NotImplemented); the store uses the server's (2, 9, 14, 28, 40, 66, ...).
"""

from asyncmongo.testing.store.commands import Store
from asyncmongo.testing.store.context import SessionContext
from asyncmongo.testing.store.errors import StoreError

__all__ = ["SessionContext", "Store", "StoreError"]
