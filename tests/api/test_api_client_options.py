"""Client options that reach the codec and the handshake: uuidRepresentation from the
connection string (uri-options spec, PyMongo's values) or a keyword, driver_info, and the
public DriverInfo / ServerApi names."""

from __future__ import annotations

import uuid

import pytest

import asyncmongo
from asyncmongo import AsyncMongoClient, DriverInfo, ServerApi
from asyncmongo.bson import Binary, UuidRepresentation
from asyncmongo.core.uri.parse import parse
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.errors import ConfigurationError
from asyncmongo.runtime.connection import ConnectionSettings
from asyncmongo.testing import Standalone

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("unspecified", UuidRepresentation.UNSPECIFIED),
        ("standard", UuidRepresentation.STANDARD),
        ("pythonLegacy", UuidRepresentation.PYTHON_LEGACY),
        ("javaLegacy", UuidRepresentation.JAVA_LEGACY),
        ("csharpLegacy", UuidRepresentation.CSHARP_LEGACY),
        ("JAVALEGACY", UuidRepresentation.JAVA_LEGACY),
    ],
)
def test_uuid_representation_in_the_uri_reaches_the_codec(
    value: str, expected: UuidRepresentation
) -> None:
    client = AsyncMongoClient(f"mongodb://h/?uuidRepresentation={value}")
    assert client.codec_options.uuid_representation == expected
    assert client.db.coll.codec_options.uuid_representation == expected


def test_uuid_representation_defaults_to_unspecified() -> None:
    assert AsyncMongoClient("mongodb://h").codec_options.uuid_representation == (
        UuidRepresentation.UNSPECIFIED
    )
    assert parse("mongodb://h").uuid_representation == "unspecified"


def test_a_uuid_representation_keyword_overrides_the_uri() -> None:
    uri = "mongodb://h/?uuidRepresentation=javaLegacy"
    by_name = AsyncMongoClient(uri, uuidRepresentation="pythonLegacy")
    assert by_name.codec_options.uuid_representation == UuidRepresentation.PYTHON_LEGACY
    by_enum = AsyncMongoClient(uri, uuid_representation=UuidRepresentation.STANDARD)
    assert by_enum.codec_options.uuid_representation == UuidRepresentation.STANDARD


@pytest.mark.parametrize(
    ("uri", "keywords"),
    [
        ("mongodb://h/?uuidRepresentation=bogus", {}),
        ("mongodb://h", {"uuidRepresentation": "python_legacy"}),
    ],
)
def test_an_unknown_uuid_representation_is_a_configuration_error(
    uri: str, keywords: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError, match="uuidRepresentation"):
        AsyncMongoClient(uri, **keywords)


async def test_uuids_round_trip_in_the_uri_representation() -> None:
    value = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri + "?uuidRepresentation=javaLegacy") as client:
            await client.db.coll.insert_one({"_id": 1, "u": value})
            assert (await client.db.coll.find_one({"_id": 1})) == {"_id": 1, "u": value}
            raw = client.db.get_collection(
                "coll",
                codec_options=client.codec_options.with_options(
                    uuid_representation=UuidRepresentation.UNSPECIFIED
                ),
            )
            stored = await raw.find_one({"_id": 1})
            assert stored is not None and isinstance(stored["u"], Binary)
            assert stored["u"].subtype == 3  # the legacy subtype, Java byte order


def test_driver_info_flows_into_the_handshake_metadata() -> None:
    info = DriverInfo("wrapper", "2.0", "wrapper-platform")
    settings = ConnectionSettings.from_client_options(parse("mongodb://h", driver_info=info))
    assert settings.driver_info == (info,)
    settings = settings.__class__(
        driver_info=settings.driver_info, host=HostInfo.detect({}, False)
    )
    driver = settings.handshake_options().metadata["driver"]
    assert driver["name"].endswith("|wrapper") and driver["version"].endswith("|2.0")
    many = parse("mongodb://h", driver_info=[info, DriverInfo("other")])
    assert many.driver_info == (info, DriverInfo("other"))
    with pytest.raises(ConfigurationError, match="DriverInfo"):
        parse("mongodb://h", driver_info={"name": "x"})


def test_driver_info_and_server_api_are_public() -> None:
    assert asyncmongo.DriverInfo is DriverInfo and asyncmongo.ServerApi is ServerApi
    assert {"DriverInfo", "ServerApi"} <= set(asyncmongo.__all__)
    client = AsyncMongoClient("mongodb://h", server_api=ServerApi("1"))
    assert ConnectionSettings.from_client_options(client.options).server_api == ServerApi("1")
