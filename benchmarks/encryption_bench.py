"""The in-use encryption benchmark: bulk decryption (client-side-encryption tests,
"Benchmarking Bulk Decryption"), side by side with PyMongo and libmongocrypt's floor.

Set-up, as the spec says: a local-KMS data key, 1500 strings ``value 0001`` ... encrypted
deterministically, and one document ``{key0001: <ciphertext>, ...}``. Each row decrypts that
document (BSON bytes in, BSON bytes out) through one libmongocrypt handle, repeatedly for
``--seconds``, after a one-second warm-up; ``--trials`` times per concurrency level; the median
ops/s is reported.

- ``floor``: pymongocrypt's ``MongoCrypt`` driven synchronously with nothing around it. After
  the warm-up the data key is in libmongocrypt's cache, so a context goes straight to READY:
  this is what the C library and its bindings cost, the least any driver can do.
- ``asyncmongo``: what asyncmongo's automatic decryption runs per reply (a decryption context
  driven by ``asyncmongo.encryption.state_machine.run_state_machine`` on the event loop).
- ``pymongo``: PyMongo's ``AsyncMongoClient`` automatic decryption (``_Encrypter.decrypt``,
  pymongocrypt's AsyncAutoEncrypter).

The spec's thread counts (1, 2, 8, 64) become concurrent tasks on one event loop for both
drivers: asyncmongo has no threads, and PyMongo's async client runs on the loop too. The key
vault is a simulated standalone (asyncmongo.testing) in this process; after the warm-up no
row touches it (the key is cached), so it costs nothing measured.

Run: ``python benchmarks/encryption_bench.py [--seconds 1] [--trials 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import encode
from asyncmongo.encryption import AsyncClientEncryption
from asyncmongo.encryption._binding import load
from asyncmongo.encryption.client_encryption import key_vault_io, mongocrypt_options
from asyncmongo.encryption.key_vault import KeyVaultIO, key_vault_collection
from asyncmongo.encryption.state_machine import run_state_machine
from asyncmongo.testing import Standalone

KEY_VAULT = "keyvault.datakeys"
KMS_PROVIDERS = {"local": {"key": bytes(range(96))}}
ALGORITHM = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"
VALUES = 1500

Decrypt = Callable[[bytes], Awaitable[Any]]


async def make_document(client: AsyncMongoClient[Any]) -> bytes:
    """The spec's document of 1500 deterministic ciphertexts, as BSON."""
    async with AsyncClientEncryption(KMS_PROVIDERS, KEY_VAULT, client,
                                     client.codec_options) as encryption:
        key_id = await encryption.create_data_key("local")
        document = {}
        for i in range(1, VALUES + 1):
            document[f"key{i:04d}"] = await encryption.encrypt(
                f"value {i:04d}", ALGORITHM, key_id=key_id)
    return encode(document)


def floor_decrypter(binding: Any, io: KeyVaultIO) -> tuple[Any, Decrypt]:
    """libmongocrypt alone: the context is driven without awaiting anything once the key is
    cached (the first call fetches it through the event loop)."""
    crypt = binding.MongoCrypt(mongocrypt_options(binding, KMS_PROVIDERS, None), io)
    lib = binding.lib

    async def decrypt(document: bytes) -> bytes | None:
        with crypt.decryption_context(document) as ctx:
            if ctx.state == lib.MONGOCRYPT_CTX_READY:
                return bytes(ctx.finish())
            return await run_state_machine(binding, ctx, io)

    return crypt, decrypt


def asyncmongo_decrypter(binding: Any, io: KeyVaultIO) -> tuple[Any, Decrypt]:
    """asyncmongo's automatic decryption of one reply (AutoDecrypter.decrypt before decoding)."""
    crypt = binding.MongoCrypt(mongocrypt_options(binding, KMS_PROVIDERS, None), io)

    async def decrypt(document: bytes) -> bytes | None:
        with crypt.decryption_context(document) as ctx:
            return await run_state_machine(binding, ctx, io)

    return crypt, decrypt


async def measure(decrypt: Decrypt, document: bytes, tasks: int, seconds: float) -> float:
    """Decrypt ops/s with ``tasks`` concurrent tasks for ``seconds``."""
    count = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count
        while time.perf_counter() < stop:
            await decrypt(document)
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return count / (time.perf_counter() - started)


async def main(args: argparse.Namespace) -> None:
    binding = load()
    async with Standalone() as mongod:
        client: AsyncMongoClient[Any] = AsyncMongoClient(mongod.uri)
        document = await make_document(client)
        io = key_vault_io(binding, key_vault_collection(client, KEY_VAULT), None)
        rows: dict[str, Decrypt] = {}
        closers: list[Callable[[], Any]] = []
        floor_crypt, rows["floor"] = floor_decrypter(binding, io)
        ours_crypt, rows["asyncmongo"] = asyncmongo_decrypter(binding, io)
        closers += [floor_crypt.close, ours_crypt.close]
        pymongo_client = None
        try:
            import pymongo
            from pymongo.encryption_options import AutoEncryptionOpts
        except ImportError:
            print("pymongo is not installed: its row is left out", file=sys.stderr)
        else:
            pymongo_client = pymongo.AsyncMongoClient(
                mongod.uri, auto_encryption_opts=AutoEncryptionOpts(
                    KMS_PROVIDERS, KEY_VAULT, bypass_auto_encryption=True))
            rows["pymongo"] = pymongo_client._encrypter.decrypt
        try:
            for decrypt in rows.values():  # warm-up: one second each, keys cached
                await measure(decrypt, document, 1, 1.0)
            results: dict[tuple[str, int], float] = {}
            for tasks in args.concurrency:
                for name, decrypt in rows.items():
                    trials = [await measure(decrypt, document, tasks, args.seconds)
                              for _ in range(args.trials)]
                    results[name, tasks] = statistics.median(trials)
        finally:
            for close in closers:
                close()
            if pymongo_client is not None:
                await pymongo_client.close()
            await client.close()
    report(results, list(rows), args)


def report(results: dict[tuple[str, int], float], names: list[str],
           args: argparse.Namespace) -> None:
    print(f"Bulk decryption of {VALUES} deterministic values (median ops/s of {args.trials} "
          f"trials x {args.seconds}s; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    header = f"{'tasks':>6} " + "".join(f"{name:>12}" for name in names)
    ratios = [n for n in ("pymongo", "floor") if n in names]
    header += "".join(f"{'vs ' + n:>12}" for n in ratios)
    print(header)
    for tasks in args.concurrency:
        line = f"{tasks:>6} " + "".join(f"{results[n, tasks]:>12.1f}" for n in names)
        ours = results["asyncmongo", tasks]
        line += "".join(f"{ours / results[n, tasks]:>11.2f}x" for n in ratios)
        print(line)
    print("vs X: asyncmongo's ops/s divided by X's (above 1: asyncmongo is faster).")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one trial")
    parser.add_argument("--trials", type=int, default=10, help="trials per concurrency level")
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 2, 8, 64], help="task counts, comma-separated")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
