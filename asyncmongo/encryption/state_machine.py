"""Drive a libmongocrypt context to its end on the event loop.

A context (pymongocrypt's ``MongoCryptContext``) reports a state; each state names the I/O
it needs (client-side encryption spec, "libmongocrypt: State machine"). This loop does that
I/O through :class:`~asyncmongo.encryption.key_vault.KeyVaultIO` and feeds the results back,
until the context is ready (its result: BSON bytes) or done. No threads: libmongocrypt's own
work is CPU-only and short, every wait is an ``await``.
"""

from __future__ import annotations

from typing import Any

from asyncmongo.encryption._binding import Binding
from asyncmongo.encryption.key_vault import KeyVaultIO
from asyncmongo.encryption.on_demand import on_demand_credentials
from asyncmongo.errors import InvalidOperation

__all__ = ["on_demand_credentials", "run_state_machine"]


async def run_state_machine(binding: Binding, ctx: Any, io: KeyVaultIO) -> bytes | None:
    """Run ``ctx`` to completion; its final BSON bytes, or None when it has none (DONE)."""
    lib = binding.lib
    while True:
        state = ctx.state
        if state == lib.MONGOCRYPT_CTX_ERROR:
            ctx._raise_from_status()
        elif state == lib.MONGOCRYPT_CTX_READY:
            return bytes(ctx.finish())
        elif state == lib.MONGOCRYPT_CTX_DONE:
            return None
        elif state == lib.MONGOCRYPT_CTX_NEED_MONGO_KEYS:
            await _fetch_keys(ctx, io)
        elif state == lib.MONGOCRYPT_CTX_NEED_KMS:
            await _kms_requests(ctx, io)
        elif state == lib.MONGOCRYPT_CTX_NEED_MONGO_COLLINFO:  # automatic encryption
            for info in await io.collection_info(ctx.database, ctx.mongo_operation()) or ():
                ctx.add_mongo_operation_result(info)
            ctx.complete_mongo_operation()
        elif state == lib.MONGOCRYPT_CTX_NEED_MONGO_MARKINGS:  # automatic encryption
            ctx.add_mongo_operation_result(
                await io.mark_command(ctx.database, ctx.mongo_operation()))
            ctx.complete_mongo_operation()
        elif state == lib.MONGOCRYPT_CTX_NEED_KMS_CREDENTIALS:
            ctx.provide_kms_providers(io.bson_encode(await on_demand_credentials(
                ctx.kms_providers, credential_providers=io.credential_providers)))
        else:
            raise InvalidOperation(f"unexpected libmongocrypt state {state}")


async def _fetch_keys(ctx: Any, io: KeyVaultIO) -> None:
    """NEED_MONGO_KEYS: find the keys the context names in the key vault, feed each."""
    async for key in io.fetch_keys(ctx.mongo_operation()):
        ctx.add_mongo_operation_result(key)
    ctx.complete_mongo_operation()


async def _kms_requests(ctx: Any, io: KeyVaultIO) -> None:
    """NEED_KMS: one round trip per KMS context, then tell libmongocrypt they are done."""
    for kms_context in ctx.kms_contexts():
        with kms_context:
            await io.kms_request(kms_context)
    ctx.complete_kms()
