"""The CMAP logging tests that need a client against a server, run against asyncmongo.testing.

spec_tests/data/connection-monitoring-and-pooling/logging/*.json are unified-format files; the
ones with real operations (``listDatabases``, a ``failPoint``) run here with AsyncMongoClient
against a simulated Standalone (with a SCRAM user when a requirement asks for ``auth``). The
"asyncmongo.connection" logger is captured while the observed client lives; the file's
``failPointClient`` is played by a raw admin connection, which has no pool and so logs nothing.
Messages are snapshotted when the operations end, before leftover clients are closed (as the
unified runner compares them before it clears its entity map).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.auth.credential import MongoCredential
from asyncmongo.errors import ConnectionFailure, MongoError, OperationFailure
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect
from asyncmongo.testing import Standalone
from asyncmongo.testing.builtins import SERVER_VERSION
from spec_tests.support.cmap_integration import unmet_requirement, version_tuple
from spec_tests.support.cmap_runner import LogCapture

#: The runner's user when a requirement asks for an authenticated server.
USER, PASSWORD = "runner", "runner-password"
#: The operations this runner plays (anything else is a runner bug: the test fails).
OPERATIONS = frozenset({"createEntities", "failPoint", "listDatabases", "close"})
Messages = list[tuple[int, Mapping[str, Any]]]


def needs_server(test: Mapping[str, Any]) -> bool:
    """A test with operations beyond creating a client and waiting for its pool's events."""
    return any(op["name"] not in ("createEntities", "waitForEvent") for op in test["operations"])


def observed_clients(test: Mapping[str, Any]) -> set[str]:
    """The ids of the clients created with ``observeLogMessages: {connection: ...}``."""
    return {
        entity["client"]["id"]
        for op in test["operations"]
        if op["name"] == "createEntities"
        for entity in op["arguments"]["entities"]
        if "connection" in entity["client"].get("observeLogMessages", {})
    }


def needs_auth(requirements: Sequence[Mapping[str, Any]]) -> bool:
    return any(req.get("auth") is True for req in requirements)


@asynccontextmanager
async def captured_connection_log() -> AsyncIterator[LogCapture]:
    logger = logging.getLogger("asyncmongo.connection")
    capture = LogCapture()
    old_level = logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    try:
        yield capture
    finally:
        logger.removeHandler(capture)
        logger.setLevel(old_level)


class ClientLoggingRunner:
    """Plays one test's operations; :meth:`run` returns the observed client's log messages."""

    def __init__(self, test: Mapping[str, Any], deployment: Standalone, auth: bool) -> None:
        self.test = test
        self.deployment = deployment
        self.auth = auth
        self.clients: dict[str, AsyncMongoClient] = {}
        self.admin: Connection | None = None
        self.fail_points: list[str] = []

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.deployment.server.port)

    async def run(self) -> Messages:
        try:
            async with captured_connection_log() as capture:
                for operation in self.test["operations"]:
                    await self.run_operation(operation)
                return list(capture.messages)
        finally:
            await self.cleanup()

    async def cleanup(self) -> None:
        for client in self.clients.values():
            await client.close()
        if self.admin is not None:
            for name in self.fail_points:
                await self.admin.command(
                    "admin", {"configureFailPoint": name, "mode": "off"}, check=True
                )
            await self.admin.aclose()

    async def run_operation(self, op: Mapping[str, Any]) -> None:
        name, arguments = op["name"], op.get("arguments", {})
        assert name in OPERATIONS, f"operation {name!r} is not played by this runner"
        if name == "createEntities":
            for entity in arguments["entities"]:
                self.create_client(entity["client"])
        elif name == "failPoint":
            await self.configure_fail_point(arguments["failPoint"])
        elif name == "close":
            await self.clients.pop(op["object"]).close()
        else:
            await self.expect(op.get("expectError"), self.list_databases(op["object"], arguments))

    def create_client(self, spec: Mapping[str, Any]) -> None:
        options = dict(spec.get("uriOptions", {}))
        if self.auth:
            options.update(username=USER, password=PASSWORD)
        self.clients[spec["id"]] = AsyncMongoClient(self.deployment.uri, **options)

    async def configure_fail_point(self, command: Mapping[str, Any]) -> None:
        if self.admin is None:
            credential = MongoCredential(None, "admin", USER, PASSWORD) if self.auth else None
            authenticator = CredentialAuthenticator(credential) if credential else None
            settings = ConnectionSettings(connect_timeout=5.0)
            self.admin = await connect(self.address, settings, id=0, authenticator=authenticator)
        await self.admin.command("admin", command, check=True)
        self.fail_points.append(command["configureFailPoint"])

    async def list_databases(self, client_id: str, arguments: Mapping[str, Any]) -> None:
        cursor = await self.clients[client_id].list_databases(**arguments)
        await cursor.to_list()

    @staticmethod
    async def expect(expected: Mapping[str, Any] | None, running: Any) -> None:
        try:
            await running
        except MongoError as exc:
            assert expected is not None, f"unexpected error {exc!r}"
            if expected.get("isClientError"):
                # unified format: an error raised by the driver, not one the server returned
                assert isinstance(exc, ConnectionFailure) and not isinstance(
                    exc, OperationFailure
                ), repr(exc)
            return
        assert expected is None, f"expected an error {expected}, nothing was raised"


def unmet_requirements(
    file_requirements: Sequence[Mapping[str, Any]], test: Mapping[str, Any]
) -> str | None:
    """Why a simulated Standalone cannot run ``test`` (None: it can).

    The file's and the test's runOnRequirements must both be met (each list by any entry);
    authentication is on offer (the Standalone gets a SCRAM user), so ``auth`` never blocks.
    """
    version = version_tuple(SERVER_VERSION)
    for requirements in (file_requirements, test.get("runOnRequirements", [])):
        reason = unmet_requirement(requirements, "single", version)
        if reason is not None:
            return reason
    return None


async def run_client_logging_test(
    file_requirements: Sequence[Mapping[str, Any]], test: Mapping[str, Any]
) -> Messages:
    """Run ``test`` against a simulated Standalone; its observed client's log messages."""
    requirements = [*file_requirements, *test.get("runOnRequirements", [])]
    auth = needs_auth(requirements)
    users = {USER: PASSWORD} if auth else None
    async with Standalone(users=users) as deployment:
        return await ClientLoggingRunner(test, deployment, auth).run()
