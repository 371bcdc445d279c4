"""The entity map: clients, databases, collections, sessions, threads and saved results.

Unified test format, "Entity Map": names are unique within a test; a reference to an
undefined name, or to an entity of the wrong type, is an error in the test file. Entities are
created from the file's ``createEntities`` before each test (and by the createEntities
operation) and closed after it: clients are closed, threads' tasks awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection.read_preference import ReadPreference
from asyncmongo.core.wire.handshake import ServerApi
from spec_tests.unified.errors import ApiMissing, TestFormatError, Unsupported
from spec_tests.unified.events import ClientObserver
from spec_tests.unified.target import Target, direct_uri
from spec_tests.unified.tracing import SpanRecorder

__all__ = ["ClientEntity", "EntityMap", "ThreadEntity", "call_api", "collection_options"]


@dataclass(slots=True)
class ClientEntity:
    """A client entity: the client and what its listener observed."""

    client: AsyncMongoClient
    observer: ClientObserver
    observe_log_messages: Mapping[str, str] = field(default_factory=dict)
    #: observeTracingMessages: the spans the client traced.
    spans: SpanRecorder | None = None


_THREAD_WAIT_SECONDS = 10.0
#: The smallest heartbeatFrequencyMS the URI options spec allows.
_FAST_HEARTBEAT_MS = 500


class ThreadEntity:
    """A test-runner "thread": an asyncio task running the operations sent to it in order."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Callable[[], Awaitable[None]] | None] = asyncio.Queue()
        self._error: BaseException | None = None
        self._task = asyncio.get_running_loop().create_task(self._work())

    async def _work(self) -> None:
        while (job := await self._queue.get()) is not None:
            try:
                if self._error is None:
                    await job()
            except Exception as exc:
                self._error = exc
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def submit(self, job: Callable[[], Awaitable[None]]) -> None:
        self._queue.put_nowait(job)

    async def wait(self) -> None:
        """waitForThread: every submitted operation finished (10 s at most); re-raise the
        first error."""
        await asyncio.wait_for(self._queue.join(), _THREAD_WAIT_SECONDS)
        if self._error is not None:
            raise self._error

    async def close(self) -> None:
        self._queue.put_nowait(None)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(self._task, 5)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


async def call_api(obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``obj.method(...)`` (awaiting it if it returns an awaitable).

    A method the asyncmongo object does not have yet is a skip that names it.
    """
    # Look the method up on the class: AsyncDatabase.__getattr__ would hand back a
    # collection named after a method that does not exist yet.
    if getattr(type(obj), method, None) is None:
        raise ApiMissing(f"{type(obj).__name__}.{method}")
    function = getattr(obj, method)
    _check_parameters(obj, method, function, kwargs)
    result = function(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _check_parameters(obj: Any, method: str, function: Any, kwargs: Mapping[str, Any]) -> None:
    """An option the asyncmongo method does not take (and no ``**kwargs`` to pass it on)
    is an API piece not built yet: skip naming it rather than fail with a TypeError."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    names = {p.name for p in parameters}
    unknown = sorted(set(kwargs) - names)
    if unknown:
        raise ApiMissing(f"{type(obj).__name__}.{method}({', '.join(unknown)}=...)")


def collection_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """collectionOrDatabaseOptions as PyMongo keyword arguments."""
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key == "readConcern":
            kwargs["read_concern"] = ReadConcern(value.get("level"))
        elif key == "writeConcern":
            kwargs["write_concern"] = write_concern(value)
        elif key == "readPreference":
            kwargs["read_preference"] = ReadPreference.from_document(value)
        elif key == "timeoutMS":
            kwargs["timeout_ms"] = value
        else:
            raise TestFormatError(f"unknown collection/database option {key}")
    return kwargs


def write_concern(document: Mapping[str, Any]) -> WriteConcern:
    """A test file's writeConcern document (w, wtimeoutMS, journal; j accepted too)."""
    fields = dict(document)
    if "j" in fields:
        fields["journal"] = fields.pop("j")
    return WriteConcern.from_document(fields)


class EntityMap:
    """Named entities of one test; also the matcher's context ($$matchesEntity, lsids)."""

    def __init__(self, target: Target, *, fast_heartbeat: bool = False) -> None:
        self._target = target
        self._fast_heartbeat = fast_heartbeat
        self._entities: dict[str, Any] = {}
        self._kinds: dict[str, str] = {}
        #: The file's initialData (autoEncryptOpts: which KMS providers the key vault needs).
        self.initial_data: Sequence[Mapping[str, Any]] = ()
        #: The runner's internal client (clientEncryption operations look at the key vault
        #: through it, unobserved, to tell which KMS providers an operation needs).
        self.internal: AsyncMongoClient | None = None
        #: autoEncryptOpts' stand-in for mongocryptd, started with the first such client.
        self.query_analyzer: Any = None

    def __contains__(self, name: str) -> bool:
        return name in self._entities

    def add(self, name: str, kind: str, value: Any) -> None:
        if name in self._entities:
            raise TestFormatError(f"entity {name!r} is already defined")
        self._entities[name] = value
        self._kinds[name] = kind

    def get(self, name: str, kind: str | None = None) -> Any:
        if name not in self._entities:
            raise TestFormatError(f"entity {name!r} is not defined")
        if kind is not None and self._kinds[name] != kind:
            raise TestFormatError(f"entity {name!r} is a {self._kinds[name]}, not a {kind}")
        return self._entities[name]

    def kind(self, name: str) -> str:
        self.get(name)
        return self._kinds[name]

    def clients(self) -> dict[str, ClientEntity]:
        return {n: v for n, v in self._entities.items() if self._kinds[n] == "client"}

    # -- MatchContext ----------------------------------------------------------------------

    def bson_entity(self, name: str) -> Any:
        return self.get(name)

    def session_lsid(self, name: str) -> Mapping[str, Any]:
        session = self.get(name, "session")
        lsid = getattr(session, "session_id", None)
        if lsid is None:
            raise ApiMissing("AsyncClientSession.session_id")
        return dict(lsid)

    # -- creation --------------------------------------------------------------------------

    async def create(self, spec: Mapping[str, Any]) -> None:
        """Create one entity from a createEntities element."""
        kind, options = next(iter(spec.items()))
        creator = getattr(self, f"_create_{kind}", None)
        if creator is None:
            raise TestFormatError(f"unknown entity type {kind}")
        await creator(options)

    async def _create_client(self, options: Mapping[str, Any]) -> None:
        uri = self._target.uri
        uri_options = options.get("uriOptions", {})
        if uri_options.get("directConnection"):
            uri = direct_uri(uri)  # uri-options: exactly one seed, no replicaSet
        elif options.get("useMultipleMongoses") is False:
            uri = self._target.single_host_uri
        oidc = str(uri_options.get("authMechanism", "")).upper() == "MONGODB-OIDC"
        if oidc and self._target.simulated:
            # The auth spec's OIDC tests: no username/password (the SCRAM user's), and the
            # credential placeholder is the test environment (a token in OIDC_TOKEN_FILE).
            uri = _without_userinfo(uri)
            uri_options = {**uri_options, "authMechanismProperties": {"ENVIRONMENT": "test"}}
        kwargs = _uri_options(uri_options)
        if self._fast_heartbeat and not any(k.lower() == "heartbeatfrequencyms" for k in kwargs):
            # Executing a Test: with fail points the runner MAY lower heartbeatFrequencyMS
            # (never for a client that sets it) to speed up SDAM recovery.
            kwargs["heartbeatFrequencyMS"] = _FAST_HEARTBEAT_MS
        if "serverApi" in options:
            api = options["serverApi"]
            kwargs["server_api"] = ServerApi(api["version"], api.get("strict"),
                                             api.get("deprecationErrors"))
        observer = ClientObserver(
            observe=options.get("observeEvents", ()),
            ignore_commands=options.get("ignoreCommandMonitoringEvents", ()),
            observe_sensitive=options.get("observeSensitiveCommands", False),
        )
        for store in options.get("storeEventsAsEntities", ()):
            sink: list[dict[str, Any]] = []
            self.add(store["id"], "events", sink)
            observer.store_into(store["events"], sink)
        spans = None
        if "observeTracingMessages" in options:
            tracing = options["observeTracingMessages"]
            spans = SpanRecorder(bool(tracing.get("enableCommandPayload", False)))
            kwargs["tracing"] = spans.client_option()
        if "autoEncryptOpts" in options:
            kwargs["auto_encryption_opts"] = await self._auto_encryption_opts(
                options["autoEncryptOpts"])
        client = AsyncMongoClient(uri, event_listeners=[observer], **kwargs)
        # Drivers start monitoring when a client is constructed; asyncmongo does on aconnect.
        await client.aconnect()
        if "awaitMinPoolSizeMS" in options:
            await _await_min_pool_size(client, kwargs, options["awaitMinPoolSizeMS"])
        self.add(options["id"], "client",
                 ClientEntity(client, observer, options.get("observeLogMessages", {}), spans))

    async def _auto_encryption_opts(self, options: Mapping[str, Any]) -> Any:
        """autoEncryptOpts, with asyncmongo.testing's QueryAnalyzer as mongocryptd (one per
        test, stopped by :meth:`close`)."""
        from asyncmongo.testing import QueryAnalyzer
        from spec_tests.unified.encryption import auto_encryption_opts

        if self.query_analyzer is None:
            self.query_analyzer = QueryAnalyzer()
            await self.query_analyzer.start()
        return auto_encryption_opts(options, self.initial_data,
                                    self.query_analyzer.auto_encryption_options())

    async def _create_database(self, options: Mapping[str, Any]) -> None:
        client = self.get(options["client"], "client").client
        kwargs = collection_options(options.get("databaseOptions", {}))
        database = await call_api(client, "get_database", options["databaseName"], **kwargs)
        self.add(options["id"], "database", database)

    async def _create_collection(self, options: Mapping[str, Any]) -> None:
        database = self.get(options["database"], "database")
        kwargs = collection_options(options.get("collectionOptions", {}))
        collection = await call_api(database, "get_collection", options["collectionName"],
                                    **kwargs)
        self.add(options["id"], "collection", collection)

    async def _create_session(self, options: Mapping[str, Any]) -> None:
        client = self.get(options["client"], "client").client
        kwargs = session_options(options.get("sessionOptions", {}))
        if "snapshot_time" in kwargs:
            # sessionOptions.snapshotTime names the entity getSnapshotTime saved its value as
            kwargs["snapshot_time"] = self.get(kwargs["snapshot_time"])
        session = await call_api(client, "start_session", **kwargs)
        self.add(options["id"], "session", session)

    async def _create_bucket(self, options: Mapping[str, Any]) -> None:
        """A GridFS bucket on a database entity; bucketOptions as AsyncGridFSBucket's
        keywords (disableMD5 is a no-op: asyncmongo never computes MD5)."""
        from asyncmongo.gridfs import AsyncGridFSBucket

        database = self.get(options["database"], "database")
        bucket_options = dict(options.get("bucketOptions", {}))
        bucket_options.pop("disableMD5", None)
        kwargs: dict[str, Any] = {}
        if "bucketName" in bucket_options:
            kwargs["bucket_name"] = bucket_options.pop("bucketName")
        if "chunkSizeBytes" in bucket_options:
            kwargs["chunk_size_bytes"] = bucket_options.pop("chunkSizeBytes")
        if "timeoutMS" in bucket_options:
            kwargs["timeout_ms"] = bucket_options.pop("timeoutMS")
        kwargs.update(collection_options(bucket_options))
        self.add(options["id"], "bucket", AsyncGridFSBucket(database, **kwargs))

    async def _create_clientEncryption(self, options: Mapping[str, Any]) -> None:
        """An AsyncClientEncryption from clientEncryptionOpts: keyVaultClient (a client
        entity), keyVaultNamespace, kmsProviders (placeholders as for autoEncryptOpts, see
        :func:`client_encryption_providers`), keyExpirationMS. The codec options are the
        key vault client's."""
        from asyncmongo.encryption import AsyncClientEncryption
        from spec_tests.unified.encryption import (
            ClientEncryptionEntity,
            client_encryption_providers,
        )

        opts = dict(options["clientEncryptionOpts"])
        client = self.get(opts.pop("keyVaultClient"), "client").client
        providers, unavailable = client_encryption_providers(opts.pop("kmsProviders"))
        kwargs: dict[str, Any] = {}
        if "keyExpirationMS" in opts:
            kwargs["key_expiration_ms"] = opts.pop("keyExpirationMS")
        namespace = opts.pop("keyVaultNamespace")
        if opts:
            raise TestFormatError(f"unknown clientEncryptionOpts {sorted(opts)}")
        client_encryption = AsyncClientEncryption(providers, namespace, client,
                                                  client.codec_options, **kwargs)
        self.add(options["id"], "clientEncryption",
                 ClientEncryptionEntity(client_encryption, unavailable))

    async def _create_thread(self, options: Mapping[str, Any]) -> None:
        self.add(options["id"], "thread", ThreadEntity())

    async def _create_stream(self, options: Mapping[str, Any]) -> None:
        self.add(options["id"], "stream", bytes.fromhex(options["hexBytes"]))

    async def close(self) -> None:
        """End sessions, stop threads, close clients (in that order)."""
        for name, value in list(self._entities.items()):
            kind = self._kinds[name]
            with contextlib.suppress(Exception):
                if kind in ("findCursor", "commandCursor", "changeStream"):
                    await call_api(value, "close")
                elif kind == "session":
                    await call_api(value, "end_session")
                elif kind == "thread":
                    await value.close()
                elif kind == "clientEncryption":
                    await value.client_encryption.close()
        for entity in self.clients().values():
            await entity.client.close()
        if self.query_analyzer is not None:
            await self.query_analyzer.stop()
            self.query_analyzer = None
        self._entities.clear()
        self._kinds.clear()


async def _await_min_pool_size(client: AsyncMongoClient, uri_options: Mapping[str, Any],
                               timeout_ms: int) -> None:
    """awaitMinPoolSizeMS: wait until every server's pool holds minPoolSize idle
    connections (the unified format's client entity option)."""
    minimum = int(uri_options.get("minPoolSize", 0))
    runtime = client._runtime
    assert runtime is not None
    async with asyncio.timeout(timeout_ms / 1000):
        while True:
            servers = list(runtime.topology.servers.values())
            if servers and all(s.pool.statistics().idle >= minimum for s in servers):
                return
            await asyncio.sleep(0.01)


def _without_userinfo(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def _uri_options(options: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in options.items():
        if isinstance(value, Mapping) and "$$placeholder" in value:
            raise Unsupported(f"uriOptions.{key} is a $$placeholder for credentials this "
                              "environment does not have")
    return dict(options)


def session_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """sessionOptions as PyMongo's start_session keyword arguments."""
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key == "causalConsistency":
            kwargs["causal_consistency"] = value
        elif key == "snapshot":
            kwargs["snapshot"] = value
        elif key == "defaultTransactionOptions":
            kwargs["default_transaction_options"] = transaction_options(value)
        elif key == "snapshotTime":
            kwargs["snapshot_time"] = value
        elif key == "defaultTimeoutMS":
            kwargs["default_timeout_ms"] = value
        else:
            raise TestFormatError(f"unknown session option {key}")
    return kwargs


def transaction_options(options: Mapping[str, Any]) -> Any:
    """A TransactionOptions value (asyncmongo's, once sessions land) from a test document."""
    import importlib

    try:
        module = importlib.import_module("asyncmongo.sessions")
    except ImportError:
        raise ApiMissing("asyncmongo.sessions.TransactionOptions") from None
    factory = getattr(module, "TransactionOptions", None)
    if factory is None:
        raise ApiMissing("asyncmongo.sessions.TransactionOptions")
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key == "readConcern":
            kwargs["read_concern"] = ReadConcern(value.get("level"))
        elif key == "writeConcern":
            kwargs["write_concern"] = write_concern(value)
        elif key == "readPreference":
            kwargs["read_preference"] = ReadPreference.from_document(value)
        elif key == "maxCommitTimeMS":
            kwargs["max_commit_time_ms"] = value
        else:
            raise TestFormatError(f"unknown transaction option {key}")
    return factory(**kwargs)
