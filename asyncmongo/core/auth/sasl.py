"""The SASL command documents (auth spec, "SASL Mechanisms") as pure functions.

``saslStart`` opens a conversation and ``saslContinue`` carries it on with the server's
``conversationId`` until the server says ``done``. Payloads travel as BSON binary (subtype 0:
plain ``bytes`` in and out of the codec).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.errors import OperationFailure

__all__ = [
    "SaslReply",
    "check_ok",
    "parse_sasl_reply",
    "sasl_continue_command",
    "sasl_start_command",
]


@dataclass(frozen=True, slots=True)
class SaslReply:
    """The parts of a saslStart/saslContinue reply a conversation needs."""

    conversation_id: Any
    done: bool
    payload: bytes = field(repr=False)


def sasl_start_command(
    mechanism: str, payload: bytes, *, skip_empty_exchange: bool = False
) -> dict[str, Any]:
    """``{saslStart: 1, mechanism, payload, autoAuthorize: 1[, options]}``.

    SCRAM sets ``skip_empty_exchange`` (auth spec: ``options: {skipEmptyExchange: true}`` lets a
    4.4+ server finish one round trip earlier).
    """
    command: dict[str, Any] = {
        "saslStart": 1,
        "mechanism": mechanism,
        "payload": payload,
        "autoAuthorize": 1,
    }
    if skip_empty_exchange:
        command["options"] = {"skipEmptyExchange": True}
    return command


def sasl_continue_command(conversation_id: Any, payload: bytes) -> dict[str, Any]:
    """``{saslContinue: 1, conversationId, payload}``."""
    return {"saslContinue": 1, "conversationId": conversation_id, "payload": payload}


def check_ok(reply: Mapping[str, Any]) -> None:
    """Raise OperationFailure (the server's code kept, e.g. 18) unless ``reply`` has ``ok: 1``."""
    ok = reply.get("ok")
    if isinstance(ok, int | float) and ok == 1:
        return
    message = reply.get("errmsg")
    code = reply.get("code")
    raise OperationFailure(
        message if isinstance(message, str) else "authentication failed",
        code if isinstance(code, int) else None,
        reply,
    )


def parse_sasl_reply(reply: Mapping[str, Any], *, speculative: bool = False) -> SaslReply:
    """Check and unpack a saslStart/saslContinue reply.

    ``speculative=True`` reads the ``speculativeAuthenticate`` document of a hello reply, which
    has the same fields but no ``ok``.
    """
    if not speculative:
        check_ok(reply)
    payload = reply.get("payload", b"")
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise OperationFailure("SASL: the server reply's payload is not binary", None, reply)
    if "conversationId" not in reply:
        raise OperationFailure("SASL: the server reply has no conversationId", None, reply)
    done = reply.get("done", False)
    if not isinstance(done, bool):
        raise OperationFailure("SASL: the server reply's done is not a boolean", None, reply)
    return SaslReply(reply["conversationId"], done, bytes(payload))
