"""A simulated KMIP server: the operations libmongocrypt sends for the ``kmip`` provider,
over TLS, in KMIP 1.x TTLV.

- Register (a SecretData object: the 96 bytes libmongocrypt uses as the master key),
  Activate, Get: what ``create_data_key("kmip")`` and decryption need (not delegated);
- Create (an AES-256 symmetric key), Encrypt, Decrypt: ``{"delegated": True}`` master keys,
  where the server encrypts the data key. The cipher is the simulator's wrapping
  (:mod:`~asyncmongo.testing.kms.wrapping`), bound to the key's identifier, with a random
  IV returned as the real servers return AES-CBC's.

Objects live in memory (``server.objects``); an unknown identifier, an object not active, or
another operation gets a failed ResultStatus with a reason, as a real server answers.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import ssl
from dataclasses import dataclass, field
from enum import IntEnum

from asyncmongo.testing.kms.ttlv import Item, Tag, Type, decode, encode, structure
from asyncmongo.testing.kms.wrapping import KeyWrapper, UnwrapError
from asyncmongo.testing.tcp_service import TcpService

__all__ = ["KmipKms", "KmipObject", "Operation"]


class Operation(IntEnum):
    CREATE = 0x01
    REGISTER = 0x03
    GET = 0x0A
    ACTIVATE = 0x12
    ENCRYPT = 0x1F
    DECRYPT = 0x20


OBJECT_SYMMETRIC_KEY = 2
OBJECT_SECRET_DATA = 7
SUCCESS, OPERATION_FAILED = 0, 1
REASON_ITEM_NOT_FOUND, REASON_PERMISSION_DENIED = 1, 0x0F
REASON_OPERATION_NOT_SUPPORTED, REASON_INVALID_MESSAGE = 0x04, 0x0A
KEY_FORMAT_OPAQUE, KEY_FORMAT_RAW = 2, 1
IV_SIZE = 16


class KmipFailure(Exception):
    def __init__(self, reason: int, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class KmipObject:
    """A managed object: its type, key material, and whether it was activated."""

    object_type: int
    material: bytes
    active: bool = False
    created: datetime.datetime = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC))


def _int(tag: int, value: int) -> Item:
    return Item(tag, Type.INTEGER, value)


def _enum(tag: int, value: int) -> Item:
    return Item(tag, Type.ENUMERATION, value)


def _text(tag: int, value: str) -> Item:
    return Item(tag, Type.TEXT_STRING, value)


def _bytes(tag: int, value: bytes) -> Item:
    return Item(tag, Type.BYTE_STRING, value)


class KmipKms(TcpService):
    """The KMIP server on 127.0.0.1 (TLS with ``ssl_context``; KMIP servers usually require
    a client certificate: make the context so). ``endpoint`` is ``"127.0.0.1:<port>"``."""

    provider = "kmip"

    def __init__(self, ssl_context: ssl.SSLContext, *, host: str = "127.0.0.1", port: int = 0,
                 secret: bytes | None = None) -> None:
        super().__init__(host=host, port=port, ssl_context=ssl_context)
        self.wrapper = KeyWrapper(secret)
        self.objects: dict[str, KmipObject] = {}
        #: The operation of every request, in order.
        self.operations: list[Operation | int] = []
        self._next_id = 1

    def __repr__(self) -> str:
        return (f"<KmipKms {self.endpoint}: {len(self.objects)} objects, "
                f"{len(self.operations)} requests>")

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def register(self, material: bytes, object_type: int = OBJECT_SECRET_DATA,
                 active: bool = True) -> str:
        """Add an object directly (a key "1" made beforehand, as the prose tests assume);
        its unique identifier."""
        unique_id = str(self._next_id)
        self._next_id += 1
        self.objects[unique_id] = KmipObject(object_type, material, active)
        return unique_id

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readexactly(8)
                body = await reader.readexactly(int.from_bytes(header[4:8], "big"))
                writer.write(self.respond(header + body))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def respond(self, message: bytes) -> bytes:
        """The ResponseMessage for one RequestMessage."""
        operation, status, reason, text = 0, SUCCESS, 0, ""
        payload = structure(Tag.RESPONSE_PAYLOAD)
        try:
            request, _ = decode(message)
            operation_item = request.find(Tag.BATCH_ITEM, Tag.OPERATION)
            request_payload = request.find(Tag.BATCH_ITEM, Tag.REQUEST_PAYLOAD)
            if operation_item is None or request_payload is None:
                raise KmipFailure(REASON_INVALID_MESSAGE, "no Operation or RequestPayload")
            operation = operation_item.value
            self.operations.append(operation)
            payload = structure(Tag.RESPONSE_PAYLOAD, *self._perform(operation, request_payload))
        except KmipFailure as exc:
            status, reason, text = OPERATION_FAILED, exc.reason, str(exc)
        except (ValueError, KeyError) as exc:
            status, reason, text = OPERATION_FAILED, REASON_INVALID_MESSAGE, str(exc)
        batch: list[Item] = [_enum(Tag.OPERATION, operation), _enum(Tag.RESULT_STATUS, status)]
        if status == SUCCESS:
            batch.append(payload)
        else:
            batch += [_enum(Tag.RESULT_REASON, reason), _text(Tag.RESULT_MESSAGE, text)]
        response = structure(
            Tag.RESPONSE_MESSAGE,
            structure(Tag.RESPONSE_HEADER,
                      structure(Tag.PROTOCOL_VERSION, _int(Tag.PROTOCOL_VERSION_MAJOR, 1),
                                _int(Tag.PROTOCOL_VERSION_MINOR, 0)),
                      Item(Tag.TIME_STAMP, Type.DATE_TIME,
                           datetime.datetime.now(datetime.UTC)),
                      _int(Tag.BATCH_COUNT, 1)),
            structure(Tag.BATCH_ITEM, *batch),
        )
        return encode(response)

    def _perform(self, operation: int, payload: Item) -> list[Item]:
        if operation == Operation.REGISTER:
            material = payload.find(Tag.SECRET_DATA, Tag.KEY_BLOCK, Tag.KEY_VALUE,
                                    Tag.KEY_MATERIAL)
            if material is None:
                raise KmipFailure(REASON_INVALID_MESSAGE, "Register needs SecretData")
            return [_text(Tag.UNIQUE_IDENTIFIER,
                          self.register(material.value, OBJECT_SECRET_DATA, active=False))]
        if operation == Operation.CREATE:
            return [_enum(Tag.OBJECT_TYPE, OBJECT_SYMMETRIC_KEY),
                    _text(Tag.UNIQUE_IDENTIFIER,
                          self.register(os.urandom(32), OBJECT_SYMMETRIC_KEY, active=False))]
        unique_id, managed = self._object(payload)
        if operation == Operation.ACTIVATE:
            managed.active = True
            return [_text(Tag.UNIQUE_IDENTIFIER, unique_id)]
        if operation == Operation.GET:
            return self._get(unique_id, managed)
        if not managed.active:
            raise KmipFailure(REASON_PERMISSION_DENIED, f"object {unique_id} is not active")
        data = payload.find(Tag.DATA)
        if data is None:
            raise KmipFailure(REASON_INVALID_MESSAGE, "Encrypt/Decrypt needs Data")
        if operation == Operation.ENCRYPT:
            return [_text(Tag.UNIQUE_IDENTIFIER, unique_id),
                    _bytes(Tag.DATA, self.wrapper.wrap(unique_id, data.value)),
                    _bytes(Tag.IV_COUNTER_NONCE, os.urandom(IV_SIZE))]
        if operation == Operation.DECRYPT:
            try:
                plaintext = self.wrapper.unwrap(unique_id, data.value)
            except UnwrapError as exc:
                raise KmipFailure(REASON_INVALID_MESSAGE, str(exc)) from exc
            return [_text(Tag.UNIQUE_IDENTIFIER, unique_id), _bytes(Tag.DATA, plaintext)]
        raise KmipFailure(REASON_OPERATION_NOT_SUPPORTED, f"operation {operation:#x}")

    def _object(self, payload: Item) -> tuple[str, KmipObject]:
        item = payload.find(Tag.UNIQUE_IDENTIFIER)
        if item is None or item.value not in self.objects:
            raise KmipFailure(REASON_ITEM_NOT_FOUND,
                              f"no object {None if item is None else item.value!r}")
        return item.value, self.objects[item.value]

    def _get(self, unique_id: str, managed: KmipObject) -> list[Item]:
        if managed.object_type != OBJECT_SECRET_DATA:
            raise KmipFailure(REASON_OPERATION_NOT_SUPPORTED, "Get of a symmetric key")
        if not managed.active:
            raise KmipFailure(REASON_PERMISSION_DENIED, f"object {unique_id} is not active")
        key_block = structure(Tag.KEY_BLOCK, _enum(Tag.KEY_FORMAT_TYPE, KEY_FORMAT_OPAQUE),
                              structure(Tag.KEY_VALUE, _bytes(Tag.KEY_MATERIAL, managed.material)))
        return [_enum(Tag.OBJECT_TYPE, OBJECT_SECRET_DATA),
                _text(Tag.UNIQUE_IDENTIFIER, unique_id),
                structure(Tag.SECRET_DATA, _enum(Tag.SECRET_DATA_TYPE, 2), key_block)]


