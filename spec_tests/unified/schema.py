"""Load a unified test file: schema check, schemaVersion compatibility, runOnRequirements.

Unified test format, "Executing a Test File": a runner MUST NOT process an incompatible
file and MUST raise an error for one; "runOnRequirement": a file (or test) runs only if at
least one requirement is met by the deployment. Everything here is pure: the deployment
comes in as a :class:`ServerInfo`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from spec_tests.support.spec_json import loads_spec_json
from spec_tests.unified.jsonschema_lite import SchemaViolation, validate
from spec_tests.unified.schema_def import DEFINITIONS, ROOT

__all__ = [
    "SUPPORTED_SCHEMA_VERSION",
    "InvalidTestFile",
    "ServerInfo",
    "UnifiedFile",
    "check_schema",
    "is_compatible",
    "load_unified_file",
    "parse_version",
    "requirement_unmet_reason",
    "requirements_unmet_reason",
]

#: The newest schema version this runner understands (unified test format changelog).
SUPPORTED_SCHEMA_VERSION: Final = (1, 28, 0)

_VERSION_RE: Final = re.compile(r"^([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?")


class InvalidTestFile(Exception):
    """The file breaks the unified test format's schema or has an unsupported version."""


def parse_version(text: str) -> tuple[int, int, int]:
    """"4.9.0-alpha4-271-g7d5cf02" -> (4, 9, 0): Version String, extra parts discarded."""
    found = _VERSION_RE.match(text)
    if found is None:
        raise InvalidTestFile(f"malformed version string {text!r}")
    major, minor, patch = (int(part) if part else 0 for part in found.groups())
    return major, minor, patch


def is_compatible(schema_version: str,
                  supported: tuple[int, int, int] = SUPPORTED_SCHEMA_VERSION) -> bool:
    """Test Runner Support: same major version, and not newer than what we support."""
    wanted = parse_version(schema_version)
    return wanted[0] == supported[0] and wanted <= supported


def check_schema(raw: Any) -> None:
    """Raise :class:`InvalidTestFile` if the plain JSON value breaks the format's schema."""
    try:
        validate(raw, ROOT, DEFINITIONS)
    except SchemaViolation as exc:
        raise InvalidTestFile(f"schema violation at {exc}") from None


@dataclass(frozen=True, slots=True)
class UnifiedFile:
    """A loaded, schema-checked test file (values converted from Extended JSON)."""

    path: Path
    description: str
    schema_version: str
    run_on_requirements: tuple[Mapping[str, Any], ...]
    create_entities: tuple[Mapping[str, Any], ...]
    initial_data: tuple[Mapping[str, Any], ...]
    tests: tuple[Mapping[str, Any], ...]


def load_unified_file(path: str | Path) -> UnifiedFile:
    """Read, schema-check and version-check a unified test file."""
    path = Path(path)
    text = path.read_bytes()
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise InvalidTestFile(f"{path.name}: not JSON: {exc}") from None
    check_schema(raw)
    if not is_compatible(raw["schemaVersion"]):
        supported = ".".join(map(str, SUPPORTED_SCHEMA_VERSION))
        raise InvalidTestFile(
            f"{path.name}: schemaVersion {raw['schemaVersion']} is not supported "
            f"(this runner supports {supported})")
    doc = loads_spec_json(text)
    return UnifiedFile(
        path=path,
        description=doc["description"],
        schema_version=doc["schemaVersion"],
        run_on_requirements=tuple(doc.get("runOnRequirements", ())),
        create_entities=tuple(doc.get("createEntities", ())),
        initial_data=tuple(doc.get("initialData", ())),
        tests=tuple(doc["tests"]),
    )


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What runOnRequirements are evaluated against.

    ``topology`` is one of "single", "replicaset", "sharded", "load-balanced";
    ``shards_are_replica_sets`` answers "sharded-replicaset". ``server_parameters`` holds
    the getParameter reply (absent names are unsupported parameters).
    """

    version: tuple[int, int, int]
    topology: str
    shards_are_replica_sets: bool = False
    serverless: bool = False
    auth: bool = False
    auth_mechanisms: tuple[str, ...] = ()
    csfle: bool = False
    server_parameters: Mapping[str, Any] = field(default_factory=dict)


def _numbers_equal(expected: Any, actual: Any) -> bool:
    """Flexible Numeric Comparisons (bool is not a number)."""
    numeric = (int, float)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, numeric) and isinstance(actual, numeric):
        return float(expected) == float(actual)
    return bool(expected == actual)


def requirement_unmet_reason(requirement: Mapping[str, Any], server: ServerInfo) -> str | None:
    """None if ``server`` meets this runOnRequirement, else why not (for the skip message)."""
    checks = (_version_reason, _topology_reason, _serverless_reason, _auth_reason,
              _parameters_reason, _csfle_reason)
    reasons = [r for r in (check(requirement, server) for check in checks) if r is not None]
    return " and ".join(reasons) if reasons else None


def requirements_unmet_reason(requirements: Sequence[Mapping[str, Any]],
                              server: ServerInfo) -> str | None:
    """None if any requirement is met (or there are none), else every requirement's reason."""
    if not requirements:
        return None
    reasons = []
    for requirement in requirements:
        reason = requirement_unmet_reason(requirement, server)
        if reason is None:
            return None
        reasons.append(reason)
    return "no runOnRequirement is met: " + "; ".join(reasons)


def _version_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    text = ".".join(map(str, server.version))
    if "minServerVersion" in req and server.version < parse_version(req["minServerVersion"]):
        return f"server {text} < minServerVersion {req['minServerVersion']}"
    if "maxServerVersion" in req and server.version > parse_version(req["maxServerVersion"]):
        return f"server {text} > maxServerVersion {req['maxServerVersion']}"
    return None


def _topology_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    wanted = req.get("topologies")
    if wanted is None or server.topology in wanted:
        return None
    if ("sharded-replicaset" in wanted and server.topology == "sharded"
            and server.shards_are_replica_sets):
        return None
    return f"topology {server.topology} not in {list(wanted)}"


def _serverless_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    mode = req.get("serverless", "allow")
    if mode == "require" and not server.serverless:
        return "needs Atlas Serverless"
    if mode == "forbid" and server.serverless:
        return "forbidden on Atlas Serverless"
    return None


def _auth_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    if "auth" in req and req["auth"] != server.auth:
        return "needs authentication enabled" if req["auth"] else "needs authentication off"
    mechanism = req.get("authMechanism")
    if mechanism is not None and mechanism.lower() not in (
            m.lower() for m in server.auth_mechanisms):
        return f"server does not support authMechanism {mechanism}"
    return None


def _parameters_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    for name, expected in req.get("serverParameters", {}).items():
        if name not in server.server_parameters:
            return f"server parameter {name} is not supported"
        if not _numbers_equal(expected, server.server_parameters[name]):
            return f"server parameter {name} is not {expected!r}"
    return None


def _csfle_reason(req: Mapping[str, Any], server: ServerInfo) -> str | None:
    wanted = req.get("csfle")
    if wanted is None:
        return None
    if wanted is False:
        return "forbidden when CSFLE is supported" if server.csfle else None
    if not server.csfle:
        return "needs client-side field level encryption (pymongocrypt is not installed)"
    if isinstance(wanted, Mapping) and "minLibmongocryptVersion" in wanted:
        from spec_tests.unified.encryption import libmongocrypt_version

        have = libmongocrypt_version() or (0,)
        minimum = parse_version(wanted["minLibmongocryptVersion"])
        if have < minimum:
            return f"needs libmongocrypt {wanted['minLibmongocryptVersion']}"
    return None
