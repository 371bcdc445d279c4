"""The unified format's client ``autoEncryptOpts`` (client-side encryption), for the runner.

Automatic encryption runs with asyncmongo.testing's QueryAnalyzer as mongocryptd (the CSFLE
JSON-schema subset; no crypt_shared, no mongocryptd here). KMS credentials given as
``$$placeholder`` (unified format, "kmsProviders"): ``local`` gets the test README's
LOCAL_MASTERKEY; other providers have no credentials in this environment, so a test whose
key vault data (initialData) holds a data key wrapped by such a provider is skipped with
that reason; otherwise the unusable provider is left out (no data key of the test needs
it). libmongocrypt needs at least one provider, so a test left with none is skipped too.
(Configuring it without credentials, as for ``aws: {}``, would not do: libmongocrypt then
asks for on-demand credentials at the start of every context.)
"""

from __future__ import annotations

import base64
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spec_tests.unified.errors import Unsupported

__all__ = ["CSFLE_AVAILABLE", "ClientEncryptionEntity", "auto_encryption_opts",
           "client_encryption_providers", "libmongocrypt_version"]

#: The client-side encryption test README's LOCAL_MASTERKEY.
LOCAL_MASTER_KEY = base64.b64decode(
    "Mng0NCt4ZHVUYUJCa1kxNkVyNUR1QURhZ2h2UzR2d2RrZzh0cFBwM3R6NmdWMDFBMUN3YkQ5aXRRMkhGRGdQ"
    "V09wOGVNYUMxT2k3NjZKelhaQmRCZGJkTXVyZG9uSjFk")
CSFLE_AVAILABLE = importlib.util.find_spec("pymongocrypt") is not None


def libmongocrypt_version() -> tuple[int, ...] | None:
    """The bundled libmongocrypt's version, None without pymongocrypt."""
    if not CSFLE_AVAILABLE:
        return None
    import pymongocrypt

    text = str(pymongocrypt.libmongocrypt_version())
    return tuple(int(part) for part in text.split("-")[0].split(".")[:3])


def _key_vault_providers(initial_data: Sequence[Mapping[str, Any]], namespace: str
                         ) -> set[str]:
    db, _, coll = namespace.partition(".")
    providers = set()
    for data in initial_data:
        if data.get("databaseName") == db and data.get("collectionName") == coll:
            for doc in data.get("documents", ()):
                provider = (doc.get("masterKey") or {}).get("provider")
                if isinstance(provider, str):
                    providers.add(provider)
    return providers


def _is_placeholder(value: Any) -> bool:
    return isinstance(value, Mapping) and "$$placeholder" in value


def kms_providers(given: Mapping[str, Any], needed: set[str]) -> dict[str, Any]:
    """``kmsProviders`` with the placeholders resolved (see the module docstring)."""
    providers: dict[str, Any] = {}
    for name, fields in given.items():
        placeholders = [k for k, v in fields.items() if _is_placeholder(v)]
        if not placeholders:
            providers[name] = dict(fields)
        elif name.split(":")[0] == "local":
            providers[name] = {**fields, "key": LOCAL_MASTER_KEY}
        elif name in needed:
            raise Unsupported(
                f"the key vault holds a data key wrapped by KMS provider {name!r} (a real "
                f"cloud/KMIP key); its credentials ({', '.join(placeholders)}) are not "
                "available in this environment")
    if not providers:
        raise Unsupported(
            f"the test's only KMS providers ({', '.join(given)}) need credentials that are "
            "not available in this environment")
    return providers


def client_encryption_providers(given: Mapping[str, Any]
                                ) -> tuple[dict[str, Any], dict[str, str]]:
    """A clientEncryption entity's ``kmsProviders`` with the placeholders resolved: the
    providers to configure, and those left out (name -> why).

    As for autoEncryptOpts, ``local`` placeholders get LOCAL_MASTERKEY and a provider given
    without placeholders (``aws: {}`` included) is configured exactly as given. A provider
    whose credentials are placeholders this environment cannot fill (aws, azure, gcp, kmip:
    real cloud accounts / the mock KMIP server with its keys) is left out; an operation that
    needs it then skips naming it (:class:`ClientEncryptionEntity`). Which operations need it
    is only known per operation, so the entity is created without it.
    """
    providers: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for name, fields in given.items():
        placeholders = [k for k, v in fields.items() if _is_placeholder(v)]
        if not placeholders:
            providers[name] = dict(fields)
        elif name.split(":")[0] == "local":
            providers[name] = {**fields, "key": LOCAL_MASTER_KEY}
        else:
            unavailable[name] = (
                f"KMS provider {name!r} needs real cloud/KMIP credentials "
                f"({', '.join(placeholders)}: $$placeholder) that are not available in this "
                "environment, and the simulated KMS servers cannot stand in for the test "
                "data's keys (wrapped by the real KMS) or for its expected masterKey documents")
    if not providers:
        raise Unsupported(
            f"the clientEncryption's only KMS providers ({', '.join(given)}) need credentials "
            "that are not available in this environment")
    return providers, unavailable


@dataclass
class ClientEncryptionEntity:
    """A clientEncryption entity: the AsyncClientEncryption, and the KMS providers of the
    test's ``kmsProviders`` left out for want of credentials (name -> why)."""

    client_encryption: Any
    unavailable: dict[str, str] = field(default_factory=dict)

    def check_provider(self, name: str | None) -> None:
        """Skip (Unsupported) if ``name`` is a provider left out for want of credentials."""
        if name is not None and name in self.unavailable:
            raise Unsupported(self.unavailable[name])


def auto_encryption_opts(options: Mapping[str, Any],
                         initial_data: Sequence[Mapping[str, Any]],
                         analyzer_options: Mapping[str, Any]) -> Any:
    """An AutoEncryptionOpts from a client entity's ``autoEncryptOpts``."""
    from asyncmongo.encryption import AutoEncryptionOpts

    namespace = options["keyVaultNamespace"]
    needed = _key_vault_providers(initial_data, namespace)
    kwargs: dict[str, Any] = dict(analyzer_options)
    extra = dict(options.get("extraOptions", {}))
    for key, name in (("mongocryptdURI", "mongocryptd_uri"),
                      ("mongocryptdBypassSpawn", "mongocryptd_bypass_spawn"),
                      ("mongocryptdSpawnPath", "mongocryptd_spawn_path"),
                      ("mongocryptdSpawnArgs", "mongocryptd_spawn_args"),
                      ("cryptSharedLibPath", "crypt_shared_lib_path"),
                      ("cryptSharedLibRequired", "crypt_shared_lib_required")):
        if key in extra:
            kwargs[name] = extra.pop(key)
    if extra:
        raise Unsupported(f"autoEncryptOpts.extraOptions {sorted(extra)} are not supported")
    for key, name in (("schemaMap", "schema_map"), ("encryptedFieldsMap", "encrypted_fields_map"),
                      ("bypassAutoEncryption", "bypass_auto_encryption"),
                      ("bypassQueryAnalysis", "bypass_query_analysis"),
                      ("keyExpirationMS", "key_expiration_ms")):
        if key in options:
            kwargs[name] = options[key]
    if "encryptedFieldsMap" in options or any(
            "encryptedFields" in (data.get("createOptions") or {}) for data in initial_data):
        raise Unsupported(
            "Queryable Encryption: needs the server's encrypted collections (encryptedFields, "
            "the ESC/ECOC state collections, encryptionInformation) and query analysis of "
            "encryptedFields by crypt_shared or mongocryptd 7+; asyncmongo.testing implements "
            "neither (its QueryAnalyzer handles CSFLE JSON schemas)")
    return AutoEncryptionOpts(kms_providers(options["kmsProviders"], needed), namespace,
                              **kwargs)
