"""What the MONGODB-OIDC tests share: a simulated deployment that accepts the tokens of a test
identity provider, counting callbacks, and clients configured for them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from asyncmongo import AsyncMongoClient
from asyncmongo.auth_oidc import (
    OIDCCallback,
    OIDCCallbackContext,
    OIDCCallbackResult,
)
from asyncmongo.monitoring.command import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from asyncmongo.runtime.oidc import OidcAuthenticator
from asyncmongo.testing import ReplicaSet, Standalone, TestIdentityProvider
from asyncmongo.testing.scram import UserDirectory

APP_NAME = "oidc-prose"
Answer = Callable[[OIDCCallbackContext, int], Any]


class CountingCallback(OIDCCallback):
    """Records every context it is called with; ``answer(context, call_number)`` (1-based)
    says what to return."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.contexts: list[OIDCCallbackContext] = []

    @property
    def count(self) -> int:
        return len(self.contexts)

    async def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
        self.contexts.append(context)
        result: OIDCCallbackResult = self.answer(context, len(self.contexts))
        return result


@dataclass
class Events:
    """Command events of the application's commands, as (kind, command name)."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, event: Any) -> None:
        kind = {
            CommandStartedEvent: "started",
            CommandSucceededEvent: "succeeded",
            CommandFailedEvent: "failed",
        }.get(type(event))
        if kind is not None:
            self.seen.append((kind, event.command_name))


@dataclass
class Env:
    """A deployment with MONGODB-OIDC on, its identity provider and the events listener."""

    deployment: Any
    idp: TestIdentityProvider
    events: Events

    def token(self, subject: str = "test_user1", *, expires_in: float = 3600.0) -> str:
        return self.idp.mint_token(subject, expires_in=expires_in)

    def good(self, **fields: Any) -> Answer:
        """Answers a fresh valid token each call."""
        return lambda context, n: OIDCCallbackResult(self.token(), **fields)

    def client(self, callback: Any, *, human: bool = False, **options: Any
               ) -> AsyncMongoClient:
        name = "OIDC_HUMAN_CALLBACK" if human else "OIDC_CALLBACK"
        properties = {name: callback, **options.pop("properties", {})}
        options.setdefault("retryReads", False)
        options.setdefault("retryWrites", False)
        return AsyncMongoClient(
            self.deployment.uri,
            authMechanism="MONGODB-OIDC",
            authMechanismProperties=properties,
            appName=APP_NAME,
            event_listeners=[self.events],
            **options,
        )

    def fail_point(self, commands: list[str], **data: Any) -> Any:
        return self.deployment.fail_point(
            {"times": 1}, failCommands=commands, appName=APP_NAME, **data
        )


def oidc_of(client: AsyncMongoClient) -> OidcAuthenticator:
    """The client's OIDC authenticator: its Client Cache."""
    runtime = client._runtime
    assert runtime is not None and runtime._oidc is not None
    return runtime._oidc


@asynccontextmanager
async def oidc_deployment(*, replica_set: bool = False) -> AsyncIterator[Env]:
    users = UserDirectory()
    idp = users.enable_oidc()
    deployment: Any = ReplicaSet(3, users=users) if replica_set else Standalone(users=users)
    async with deployment:
        yield Env(deployment, idp, Events())
