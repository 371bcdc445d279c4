"""Session binding for the API: ``session=`` on a method runs its operations in that session.

:func:`sessions_bound` decorates the API classes (client, database, collection): each method
taking ``session`` binds it (a context variable the executor reads) around the call; a
method returning a cursor gives the cursor a :class:`SessionRunner` instead, since the cursor
runs its commands later. :func:`~asyncmongo.client_session.session_scope` is the same binding
as a context manager.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from asyncmongo.client_session import AsyncClientSession, session_scope
from asyncmongo.core.concern import WriteConcern
from asyncmongo.errors import InvalidArgument
from asyncmongo.runtime.attempt import generic_command
from asyncmongo.runtime.executor import bound_session

__all__ = ["SessionRunner", "sessions_bound"]

C = TypeVar("C", bound=type)
#: API methods that run the user's own command document (read-write-concern and causal
#: consistency specs: no readConcern/afterClusterTime is added; its read preference is its own).
_GENERIC_COMMANDS: Final = frozenset({"command", "cursor_command"})


def sessions_bound(cls: C) -> C:
    """Class decorator for the API classes: every method with a ``session`` argument (or
    ``session=`` in its ``**kwargs``) runs its operations in that session. Coroutine methods
    bind it around the call; a method returning a cursor (``find``) hands the cursor a
    runner bound to the session, since the cursor runs its command later."""
    for name, fn in list(vars(cls).items()):
        if name.startswith("__") or not inspect.isfunction(fn):
            continue
        parameters = inspect.signature(fn).parameters
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        if "session" not in parameters and not takes_kwargs:
            continue
        names = list(parameters)
        index = names.index("session") if "session" in names else None
        setattr(cls, name, _bind_session(fn, index))
    return cls


def _session_argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int | None) -> Any:
    session = kwargs.get("session")
    if session is None and index is not None and len(args) > index:
        session = args[index]
    if session is not None and not isinstance(session, AsyncClientSession):
        raise InvalidArgument(
            f"session must be an AsyncClientSession, not {type(session).__name__}"
        )
    return session


def _bind_session(fn: Callable[..., Any], index: int | None) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def bound_coroutine(*args: Any, **kwargs: Any) -> Any:
            if "session" not in kwargs and (index is None or len(args) <= index):
                return await fn(*args, **kwargs)  # the usual call: no session to bind
            session = _session_argument(args, kwargs, index)
            if session is None:
                return await fn(*args, **kwargs)
            token = bound_session.set(session)
            generic = generic_command.set(
                (fn.__name__ in _GENERIC_COMMANDS, kwargs.get("read_preference") is not None)
            )
            try:
                return await fn(*_acknowledged_in_transaction(session, args), **kwargs)
            finally:
                generic_command.reset(generic)
                bound_session.reset(token)

        return bound_coroutine

    @functools.wraps(fn)
    def bound_function(*args: Any, **kwargs: Any) -> Any:
        session = _session_argument(args, kwargs, index)
        result = fn(*args, **kwargs)
        runner = getattr(result, "_runner", None)
        if session is not None and runner is not None:
            result._runner = SessionRunner(runner, session)
        return result

    return bound_function


def _acknowledged_in_transaction(
    session: AsyncClientSession, args: tuple[Any, ...]
) -> tuple[Any, ...]:
    """Transactions spec: a collection's own write concern is ignored in a transaction, even
    w:0, so the call runs (and shapes its result) on a copy with the default concern."""
    if not args or not session.in_transaction:
        return args
    owner = args[0]
    concern = getattr(owner, "write_concern", None)
    if isinstance(concern, WriteConcern) and not concern.acknowledged:
        with_options = getattr(owner, "with_options", None)
        if with_options is not None:
            return (with_options(write_concern=WriteConcern()), *args[1:])
    return args


class SessionRunner:
    """A cursor's runner that runs every operation in one session."""

    __slots__ = ("_runner", "session")

    def __init__(self, runner: Any, session: AsyncClientSession) -> None:
        self._runner = runner
        self.session = session

    async def _run_operation(self, op: Any, operation_id: int | None = None) -> Any:
        with session_scope(self.session):
            return await self._runner._run_operation(op, operation_id)

    async def _run_cursor_operation(self, op: Any) -> Any:
        with session_scope(self.session):
            return await self._runner._run_cursor_operation(op)
