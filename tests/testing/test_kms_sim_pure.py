"""The pure parts of the simulated KMS servers and of the KMS client: TTLV, key wrapping,
endpoint parsing, TLS option checks, on-demand credentials."""

from __future__ import annotations

import datetime
import ssl

import pytest

from asyncmongo.encryption.kms import kms_ssl_contexts, parse_endpoint
from asyncmongo.encryption.state_machine import on_demand_credentials
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.kms.kmip import KmipKms, Operation
from asyncmongo.testing.kms.ttlv import Item, Tag, Type, decode, encode, structure
from asyncmongo.testing.kms.wrapping import KeyWrapper, UnwrapError


def test_ttlv_round_trip_and_padding() -> None:
    item = structure(
        Tag.REQUEST_MESSAGE,
        Item(Tag.BATCH_COUNT, Type.INTEGER, -3),
        Item(Tag.OPERATION, Type.ENUMERATION, Operation.GET),
        Item(Tag.UNIQUE_IDENTIFIER, Type.TEXT_STRING, "12345"),
        Item(Tag.KEY_MATERIAL, Type.BYTE_STRING, b"\x01" * 9),
        Item(Tag.STATE, Type.BOOLEAN, True),
        Item(Tag.TIME_STAMP, Type.DATE_TIME, 1_700_000_000),
    )
    data = encode(item)
    assert len(data) % 8 == 0
    decoded, size = decode(data)
    assert size == len(data)
    assert decoded == item
    assert decoded.find(Tag.UNIQUE_IDENTIFIER) == Item(Tag.UNIQUE_IDENTIFIER,
                                                       Type.TEXT_STRING, "12345")
    assert decoded.find(Tag.BATCH_ITEM, Tag.OPERATION) is None
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    stamped, _ = decode(encode(Item(Tag.TIME_STAMP, Type.DATE_TIME, when)))
    assert stamped.value == int(when.timestamp())
    with pytest.raises(ValueError, match="truncated"):
        decode(data[:-8])


def test_kmip_failure_is_a_failed_result_status() -> None:
    server = KmipKms(ssl.create_default_context(ssl.Purpose.CLIENT_AUTH))  # never started
    request = structure(Tag.REQUEST_MESSAGE, structure(
        Tag.BATCH_ITEM, Item(Tag.OPERATION, Type.ENUMERATION, Operation.GET),
        structure(Tag.REQUEST_PAYLOAD, Item(Tag.UNIQUE_IDENTIFIER, Type.TEXT_STRING, "9"))))
    reply, _ = decode(server.respond(encode(request)))
    status = reply.find(Tag.BATCH_ITEM, Tag.RESULT_STATUS)
    message = reply.find(Tag.BATCH_ITEM, Tag.RESULT_MESSAGE)
    assert status is not None and status.value == 1
    assert message is not None and "no object '9'" in message.value


def test_wrapping_is_bound_to_the_master_key_and_the_secret() -> None:
    wrapper = KeyWrapper(b"s" * 32)
    blob = wrapper.wrap("key-a", b"data key material")
    assert wrapper.unwrap("key-a", blob) == b"data key material"
    assert wrapper.unwrap(None, blob) == b"data key material"
    assert wrapper.master_key_of(blob) == "key-a"
    with pytest.raises(UnwrapError, match="another master key"):
        wrapper.unwrap("key-b", blob)
    with pytest.raises(UnwrapError, match="does not verify"):
        wrapper.unwrap("key-a", blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(UnwrapError, match="does not verify"):
        KeyWrapper(b"t" * 32).unwrap("key-a", blob)
    with pytest.raises(UnwrapError, match="not a key wrapped"):
        wrapper.unwrap(None, b"garbage")


@pytest.mark.parametrize("endpoint, expected", [
    ("kms.us-east-1.amazonaws.com", ("kms.us-east-1.amazonaws.com", 443)),
    ("127.0.0.1:9002", ("127.0.0.1", 9002)),
    ("[::1]:5696", ("::1", 5696)),
    ("[::1]", ("::1", 443)),
])
def test_parse_endpoint(endpoint: str, expected: tuple[str, int]) -> None:
    assert parse_endpoint(endpoint) == expected


def test_kms_tls_options_checks() -> None:
    assert kms_ssl_contexts(None) == {}
    with pytest.raises(ConfigurationError, match="Insecure TLS options prohibited"):
        kms_ssl_contexts({"aws": {"tlsInsecure": True}})
    with pytest.raises(ConfigurationError, match="TLS is required"):
        kms_ssl_contexts({"aws": {"tls": False}})
    with pytest.raises(ConfigurationError, match="unknown options"):
        kms_ssl_contexts({"aws": {"tlsCAFiel": "x"}})
    with pytest.raises(ConfigurationError, match="cannot load"):
        kms_ssl_contexts({"aws": {"tlsCAFile": "/nonexistent/ca.pem"}})


async def test_on_demand_aws_credentials_from_the_environment() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "S",
               "AWS_SESSION_TOKEN": "T"}
    filled = await on_demand_credentials({"aws": {}, "local": {"key": b"k"}}, environ)
    assert filled == {"aws": {"accessKeyId": "AK", "secretAccessKey": "S",
                              "sessionToken": "T"}, "local": {"key": b"k"}}
    with pytest.raises(ConfigurationError, match="not supported"):
        await on_demand_credentials({"kmip": {}}, environ)


async def test_on_demand_aws_credentials_follow_the_mongodb_aws_chain() -> None:
    """Without environment keys the chain goes on to EC2 instance metadata (here a closed
    port): the failure names on-demand aws credentials and the source tried."""
    nowhere = {"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:9"}
    with pytest.raises(ConfigurationError, match="on-demand 'aws' KMS credentials") as caught:
        await on_demand_credentials({"aws": {}}, nowhere)
    assert "EC2" in str(caught.value) or "instance metadata" in str(caught.value)
