"""Simulated KMS servers on 127.0.0.1, for client-side encryption without the cloud.

Each is an HTTPS server (TLS with the ``ssl.SSLContext`` it is given, e.g. one made from a
test CA) speaking enough of one provider's API for libmongocrypt to wrap and unwrap data
keys, with that provider's OAuth token endpoint where there is one::

    async with AwsKms(server_context, credentials={"AKIA...": "secret"}) as aws:
        kms_providers = {"aws": {"accessKeyId": "AKIA...", "secretAccessKey": "secret"}}
        master_key = {"region": "us-east-1", "key": "arn:aws:kms:...", "endpoint": aws.endpoint}

- :class:`AwsKms`: the AWS KMS JSON API (``TrentService.Encrypt`` / ``Decrypt``), SigV4
  signatures verified against ``credentials``.
- :class:`AzureKms`: Key Vault ``wrapkey`` / ``unwrapkey`` and the Microsoft identity
  platform token endpoint (point ``identityPlatformEndpoint`` at the same server).
- :class:`GcpKms`: Cloud KMS ``:encrypt`` / ``:decrypt`` and the OAuth token endpoint
  (``endpoint`` in the gcp provider settings).
- :class:`KmipKms`: KMIP 1.x over TLS: Register / Activate / Get of the secret libmongocrypt
  uses as the master key, and Create / Encrypt / Decrypt for delegated master keys.
- :class:`KmsHttpProxy`: not a KMS but the HTTP(S) CONNECT proxy KMS traffic can be routed
  through with a ``kms_connect_callback``, with the prose tests' ``/reset`` and ``/metrics``.

A wrapped key is bound to the master key that wrapped it (an unwrap with another master key
fails as the real services do) and to the server's secret (``secret=`` to share one across
servers or restarts). ``server.requests`` records what was asked; ``server.fail(...)`` makes
the next requests fail at the network or HTTP level, for KMS retry tests.
"""

from __future__ import annotations

from asyncmongo.testing.kms.aws import AwsKms
from asyncmongo.testing.kms.azure import AzureKms
from asyncmongo.testing.kms.gcp import GcpKms
from asyncmongo.testing.kms.http import HttpRequest, HttpResponse, KmsHttpServer
from asyncmongo.testing.kms.kmip import KmipKms
from asyncmongo.testing.kms.proxy import KmsHttpProxy
from asyncmongo.testing.kms.wrapping import KeyWrapper, UnwrapError

__all__ = [
    "AwsKms",
    "AzureKms",
    "GcpKms",
    "HttpRequest",
    "HttpResponse",
    "KeyWrapper",
    "KmipKms",
    "KmsHttpProxy",
    "KmsHttpServer",
    "UnwrapError",
]
