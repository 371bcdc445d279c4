"""The handshake document: metadata, every FaaS case of the spec's prose tests, truncation."""

from __future__ import annotations

from typing import Any

import bson
import pytest

from asyncmongo.core.wire.handshake import (
    DRIVER_NAME,
    MAX_METADATA_SIZE,
    DriverInfo,
    HandshakeOptions,
    HostInfo,
    ServerApi,
    bson_size,
    client_metadata,
    handshake_command,
    truncate_metadata,
)
from asyncmongo.errors import ConfigurationError

HOST = HostInfo("Linux", "Linux", "x86_64", "6.1", "CPython 3.11.7")


def meta(environ: dict[str, str], dockerenv: bool = False, **kw: Any) -> dict[str, Any]:
    host = HostInfo("Linux", "Linux", "x86_64", "6.1", "CPython 3.11.7", environ, dockerenv)
    doc = client_metadata(host, **kw)
    assert len(bson.encode(doc)) <= MAX_METADATA_SIZE
    return doc


AWS = {
    "AWS_EXECUTION_ENV": "AWS_Lambda_java8",
    "AWS_REGION": "us-east-2",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
}

# The handshake prose tests, "Test 1: environment metadata is properly captured".
PROSE: dict[str, tuple[dict[str, str], dict[str, Any] | None]] = {
    "1 valid aws": (AWS, {"name": "aws.lambda", "region": "us-east-2", "memory_mb": 1024}),
    "2 valid azure": ({"FUNCTIONS_WORKER_RUNTIME": "node"}, {"name": "azure.func"}),
    "3 valid gcp": (
        {
            "K_SERVICE": "servicename",
            "FUNCTION_MEMORY_MB": "1024",
            "FUNCTION_TIMEOUT_SEC": "60",
            "FUNCTION_REGION": "us-central1",
        },
        {"name": "gcp.func", "memory_mb": 1024, "timeout_sec": 60, "region": "us-central1"},
    ),
    "4 valid vercel": (
        {"VERCEL": "1", "VERCEL_REGION": "cdg1"},
        {"name": "vercel", "region": "cdg1"},
    ),
    "5 multiple providers": (
        {"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "FUNCTIONS_WORKER_RUNTIME": "node"},
        None,
    ),
    "6 long string": (
        {"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "AWS_REGION": "a" * 512},
        {"name": "aws.lambda"},
    ),
    "7 wrong types": (
        {"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "big"},
        {"name": "aws.lambda"},
    ),
    "8 not AWS_Lambda_": ({"AWS_EXECUTION_ENV": "EC2"}, None),
    "9 container and faas": (
        {**AWS, "KUBERNETES_SERVICE_HOST": "1"},
        {
            "name": "aws.lambda",
            "region": "us-east-2",
            "memory_mb": 1024,
            "container": {"orchestrator": "kubernetes"},
        },
    ),
    "aws runtime api": ({"AWS_LAMBDA_RUNTIME_API": "x"}, {"name": "aws.lambda"}),
    "gcp function name": ({"FUNCTION_NAME": "f"}, {"name": "gcp.func"}),
    "vercel beats aws": ({**AWS, "VERCEL": "1"}, {"name": "vercel"}),
    "azure and gcp": ({"FUNCTIONS_WORKER_RUNTIME": "x", "K_SERVICE": "y"}, None),
    "gcp bad int": ({"K_SERVICE": "s", "FUNCTION_MEMORY_MB": "99999999999"}, {"name": "gcp.func"}),
}


@pytest.mark.parametrize("environ,expected", PROSE.values(), ids=PROSE.keys())
def test_faas_environments(environ: dict[str, str], expected: dict[str, Any] | None) -> None:
    assert meta(environ).get("env") == expected


def test_long_string_case_drops_extras_keeps_os_type() -> None:
    doc = meta({"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "AWS_REGION": "a" * 512})
    assert doc["os"]["type"] == "Linux"
    assert doc["driver"] == {"name": DRIVER_NAME, "version": doc["driver"]["version"]}


def test_docker() -> None:
    assert meta({}, dockerenv=True)["env"] == {"container": {"runtime": "docker"}}


def test_no_env_when_empty() -> None:
    doc = meta({})
    assert "env" not in doc
    assert doc["os"] == {
        "type": "Linux",
        "name": "Linux",
        "architecture": "x86_64",
        "version": "6.1",
    }
    assert doc["platform"] == "CPython 3.11.7"


def test_application_name() -> None:
    assert meta({}, app_name="myapp")["application"] == {"name": "myapp"}
    with pytest.raises(ConfigurationError):
        meta({}, app_name="x" * 129)


def test_wrapping_libraries_append_once() -> None:
    lib = DriverInfo("library", "1.2", "Library Platform")
    doc = meta(
        {},
        driver_info=[
            lib,
            DriverInfo("library", "1.2", "Library Platform"),
            DriverInfo("framework", None, ""),
        ],
    )
    assert doc["driver"]["name"] == f"{DRIVER_NAME}|library|framework"
    assert doc["driver"]["version"].endswith("|1.2")
    assert doc["platform"] == "CPython 3.11.7|Library Platform"


def test_driver_info_rejects_delimiter() -> None:
    with pytest.raises(ConfigurationError):
        DriverInfo("a|b")


def test_truncation_order() -> None:
    doc = {
        "driver": {"name": "d", "version": "v"},
        "os": {"type": "Linux", "name": "n" * 100},
        "platform": "p" * 600,
        "env": {"name": "aws.lambda", "region": "r" * 50},
    }
    out = truncate_metadata(doc)
    assert out["os"] == {"type": "Linux"} and "env" not in out
    assert bson_size(out) == len(bson.encode(out)) == MAX_METADATA_SIZE
    small = truncate_metadata({**doc, "platform": "p" * 300})
    assert small["env"] == {"name": "aws.lambda"} and small["os"] == {"type": "Linux"}
    assert small["platform"] == "p" * 300


def test_bson_size_matches_codec() -> None:
    doc = {"a": "é", "b": {"c": 5, "d": True}}
    assert bson_size(doc) == len(bson.encode(doc))


def test_detect_reads_this_host() -> None:
    host = HostInfo.detect({"VERCEL": "1"}, dockerenv=False)
    assert host.os_type and host.platform and host.platform.startswith(("CPython", "PyPy"))


def test_legacy_hello_by_default() -> None:
    cmd = handshake_command(HandshakeOptions({"driver": {}}, compressors=("zlib",)))
    assert list(cmd)[:2] == ["isMaster", "helloOk"] and cmd["helloOk"] is True
    assert cmd["backpressure"] == "2" and cmd["compression"] == ["zlib"]
    assert "loadBalanced" not in cmd


def test_hello_with_server_api_or_load_balanced() -> None:
    api = HandshakeOptions({}, server_api=ServerApi("1"))
    assert next(iter(handshake_command(api))) == "hello"
    lb = handshake_command(HandshakeOptions({}, load_balanced=True))
    assert next(iter(lb)) == "hello" and lb["loadBalanced"] is True and "helloOk" not in lb


def test_auth_fields() -> None:
    cmd = handshake_command(
        HandshakeOptions({}),
        speculative_authenticate={"saslStart": 1},
        sasl_supported_mechs="admin.user",
    )
    assert cmd["saslSupportedMechs"] == "admin.user"
    assert cmd["speculativeAuthenticate"] == {"saslStart": 1}


def test_server_api_fields() -> None:
    assert ServerApi("1").command_fields() == {"apiVersion": "1"}
    assert ServerApi("1", strict=False, deprecation_errors=True).command_fields() == {
        "apiVersion": "1",
        "apiStrict": False,
        "apiDeprecationErrors": True,
    }
    with pytest.raises(ConfigurationError):
        ServerApi("2")
