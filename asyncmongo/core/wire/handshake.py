"""The initial handshake command (mongodb-handshake spec) and Stable API fields (versioned-api).

Everything that varies by host (OS, Python, environment variables, ``/.dockerenv``) comes in
as a :class:`HostInfo` value, so the document is a pure function of its inputs and every FaaS
case of the spec is a plain unit test.
"""

from __future__ import annotations

import platform
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.errors import ConfigurationError

DRIVER_NAME = "asyncmongo"
DRIVER_VERSION = "0.1.0.dev0"
#: Spec: "The entire client metadata BSON document MUST NOT exceed 512 bytes".
MAX_METADATA_SIZE = 512
#: Spec: "client.application.name cannot exceed 128 bytes".
MAX_APP_NAME_SIZE = 128
#: Versioned API: the versions this driver knows.
SERVER_API_VERSIONS = frozenset({"1"})
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ServerApi:
    """The declared Stable API (versioned-api spec): sent with every command once declared."""

    version: str
    strict: bool | None = None
    deprecation_errors: bool | None = None

    def __post_init__(self) -> None:
        if self.version not in SERVER_API_VERSIONS:
            raise ConfigurationError(f"unknown server API version {self.version!r}")

    def command_fields(self) -> dict[str, Any]:
        """apiVersion, plus apiStrict / apiDeprecationErrors only when the user set them."""
        fields: dict[str, Any] = {"apiVersion": self.version}
        if self.strict is not None:
            fields["apiStrict"] = self.strict
        if self.deprecation_errors is not None:
            fields["apiDeprecationErrors"] = self.deprecation_errors
        return fields


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """What a wrapping library appends to the metadata (spec: DriverInfoOptions).

    Empty strings count as unset; "|" (the delimiter) is rejected.
    """

    name: str
    version: str | None = None
    platform: str | None = None

    def __post_init__(self) -> None:
        for value in (self.name, self.version, self.platform):
            if value is not None and "|" in value:
                raise ConfigurationError(f"driver info must not contain '|': {value!r}")


@dataclass(frozen=True, slots=True)
class HostInfo:
    """The host facts the metadata reports; :meth:`detect` reads them from the system."""

    os_type: str = "unknown"
    os_name: str | None = None
    architecture: str | None = None
    os_version: str | None = None
    platform: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    dockerenv: bool = False

    @classmethod
    def detect(cls, environ: Mapping[str, str], dockerenv: bool) -> HostInfo:
        """This machine's facts; the environment and the ``/.dockerenv`` check come in."""
        uname = platform.uname()
        impl = platform.python_implementation()
        version = ".".join(map(str, sys.version_info[:3]))
        return cls(
            os_type=uname.system or "unknown",
            os_name=_os_pretty_name() or uname.system or None,
            architecture=uname.machine or None,
            os_version=uname.release or None,
            platform=f"{impl} {version}",
            environ=dict(environ),
            dockerenv=dockerenv,
        )


def _os_pretty_name() -> str | None:
    """``PRETTY_NAME`` of os-release(5) where there is one (spec: client.os.name)."""
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None


def faas_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """``client.env`` FaaS fields (spec, "FaaS"); {} when none or an ambiguous mix is found."""
    names = []
    if environ.get("AWS_EXECUTION_ENV", "").startswith("AWS_Lambda_") or environ.get(
        "AWS_LAMBDA_RUNTIME_API"
    ):
        names.append("aws.lambda")
    if environ.get("FUNCTIONS_WORKER_RUNTIME"):
        names.append("azure.func")
    if environ.get("K_SERVICE") or environ.get("FUNCTION_NAME"):
        names.append("gcp.func")
    if environ.get("VERCEL"):
        names.append("vercel")
    if set(names) == {"vercel", "aws.lambda"}:
        names = ["vercel"]  # spec: vercel takes precedence over aws.lambda
    if len(names) != 1:
        return {}
    return _faas_fields(names[0], environ)


_FAAS_FIELDS: Mapping[str, Sequence[tuple[str, str, type]]] = {
    "aws.lambda": (
        ("region", "AWS_REGION", str),
        ("memory_mb", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", int),
    ),
    "azure.func": (),
    "gcp.func": (
        ("memory_mb", "FUNCTION_MEMORY_MB", int),
        ("timeout_sec", "FUNCTION_TIMEOUT_SEC", int),
        ("region", "FUNCTION_REGION", str),
    ),
    "vercel": (("region", "VERCEL_REGION", str),),
}


def _faas_fields(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    env: dict[str, Any] = {"name": name}
    for key, variable, kind in _FAAS_FIELDS[name]:
        raw = environ.get(variable)
        if not raw:
            continue
        if kind is int:
            try:
                number = int(raw)
            except ValueError:
                continue  # spec: wrong types are omitted, never an error
            if -_INT32_MAX - 1 <= number <= _INT32_MAX:
                env[key] = number
        else:
            env[key] = raw
    return env


def container_env(host: HostInfo) -> dict[str, str]:
    """``client.env.container`` (spec, "Container")."""
    container = {}
    if host.dockerenv:
        container["runtime"] = "docker"
    if host.environ.get("KUBERNETES_SERVICE_HOST"):
        container["orchestrator"] = "kubernetes"
    return container


def client_metadata(
    host: HostInfo,
    app_name: str | None = None,
    driver_info: Sequence[DriverInfo] = (),
) -> dict[str, Any]:
    """The ``client`` document, shrunk to 512 bytes in the spec's truncation order."""
    if app_name is not None and len(app_name.encode()) > MAX_APP_NAME_SIZE:
        raise ConfigurationError(f"appname must be at most {MAX_APP_NAME_SIZE} bytes")
    doc: dict[str, Any] = {}
    if app_name:
        doc["application"] = {"name": app_name}
    doc["driver"] = {"name": DRIVER_NAME, "version": DRIVER_VERSION}
    doc["os"] = _os_document(host)
    platform_text = host.platform or ""
    for info in _unique(driver_info):
        doc["driver"] = _append_info(doc["driver"], info)
        if info.platform:
            platform_text = f"{platform_text}|{info.platform}"
    if platform_text:
        doc["platform"] = platform_text
    env = {**faas_env(host.environ)}
    container = container_env(host)
    if container:
        env["container"] = container
    if env:
        doc["env"] = env
    return truncate_metadata(doc)


def _os_document(host: HostInfo) -> dict[str, str]:
    os_doc = {"type": host.os_type or "unknown"}
    for key, value in (
        ("name", host.os_name),
        ("architecture", host.architecture),
        ("version", host.os_version),
    ):
        if value:
            os_doc[key] = value
    return os_doc


def append_driver_info(
    infos: Sequence[DriverInfo], info: DriverInfo
) -> tuple[DriverInfo, ...]:
    """``infos`` with ``info`` appended, unless an equal one (spec: empty string = unset,
    case-sensitive comparison) is already there: a wrapping library that appends its info
    twice, or to a client given it already, adds it once."""
    return tuple(_unique([*infos, info]))


def _unique(infos: Sequence[DriverInfo]) -> list[DriverInfo]:
    """Spec: duplicate DriverInfoOptions (empty string = unset) are appended once."""
    seen: list[tuple[str, str | None, str | None]] = []
    out = []
    for info in infos:
        key = (info.name, info.version or None, info.platform or None)
        if key not in seen:
            seen.append(key)
            out.append(info)
    return out


def _append_info(driver: Mapping[str, str], info: DriverInfo) -> dict[str, str]:
    name = f"{driver['name']}|{info.name}" if info.name else driver["name"]
    version = f"{driver['version']}|{info.version}" if info.version else driver["version"]
    return {"name": name, "version": version}


def truncate_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """Spec "Limitations": drop env extras, then os extras, then env, then cut platform."""
    doc = dict(doc)
    if bson_size(doc) <= MAX_METADATA_SIZE:
        return doc
    if "env" in doc:
        doc["env"] = {k: v for k, v in doc["env"].items() if k == "name"}
        if not doc["env"]:
            del doc["env"]
    if bson_size(doc) > MAX_METADATA_SIZE:
        doc["os"] = {"type": doc["os"]["type"]}
    if bson_size(doc) > MAX_METADATA_SIZE:
        doc.pop("env", None)
    excess = bson_size(doc) - MAX_METADATA_SIZE
    if excess > 0 and "platform" in doc:
        raw = doc["platform"].encode()
        doc["platform"] = raw[: max(0, len(raw) - excess)].decode(errors="ignore")
    if bson_size(doc) > MAX_METADATA_SIZE:
        raise ConfigurationError("client metadata cannot be made to fit in 512 bytes")
    return doc


_INT32 = struct.Struct("<i")


def bson_size(value: Mapping[str, Any]) -> int:
    """The BSON size of a metadata document (strings, int32 and sub-documents only)."""
    size = 4 + 1
    for key, item in value.items():
        size += 1 + len(key.encode()) + 1
        if isinstance(item, str):
            size += 4 + len(item.encode()) + 1
        elif isinstance(item, bool):
            size += 1
        elif isinstance(item, int):
            size += _INT32.size
        elif isinstance(item, Mapping):
            size += bson_size(item)
        else:
            raise ConfigurationError(f"unexpected metadata value {item!r}")
    return size


@dataclass(frozen=True, slots=True)
class HandshakeOptions:
    """What the handshake command depends on besides authentication."""

    metadata: Mapping[str, Any]
    compressors: tuple[str, ...] = ()
    load_balanced: bool = False
    server_api: ServerApi | None = None


def handshake_command(
    options: HandshakeOptions,
    *,
    speculative_authenticate: Mapping[str, Any] | None = None,
    sasl_supported_mechs: str | None = None,
) -> dict[str, Any]:
    """The initial hello (or legacy hello + helloOk) document, as the spec's pseudo-code."""
    cmd: dict[str, Any]
    if options.server_api is not None or options.load_balanced:
        cmd = {"hello": 1}
    else:
        cmd = {"isMaster": 1, "helloOk": True}
    cmd["backpressure"] = "2"
    cmd["client"] = dict(options.metadata)
    cmd["compression"] = list(options.compressors)
    if options.load_balanced:
        cmd["loadBalanced"] = True
    if sasl_supported_mechs is not None:
        cmd["saslSupportedMechs"] = sasl_supported_mechs
    if speculative_authenticate is not None:
        cmd["speculativeAuthenticate"] = dict(speculative_authenticate)
    return cmd
