"""A simulated AWS KMS: the JSON API's Encrypt and Decrypt (``X-Amz-Target:
TrentService.Encrypt|Decrypt``), as libmongocrypt calls them for the ``aws`` provider.

Requests must carry a SigV4 signature (service ``kms``) made with one of the server's
``credentials`` (access key id -> secret); a bad or unknown one is refused with HTTP 400
``UnrecognizedClientException`` / ``InvalidSignatureException``, as AWS does.
"""

from __future__ import annotations

import base64
import hmac
import re
import ssl
from collections.abc import Mapping
from typing import Any

from asyncmongo.core.auth.sigv4 import (
    canonical_request,
    credential_scope,
    signing_key,
    string_to_sign,
)
from asyncmongo.testing.kms.http import HttpRequest, HttpResponse, KmsHttpServer
from asyncmongo.testing.kms.wrapping import UnwrapError

__all__ = ["AwsKms"]

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), *"
    r"SignedHeaders=(?P<signed>[^,]+), *Signature=(?P<signature>[0-9a-f]+)"
)


def _aws_error(kind: str, message: str) -> HttpResponse:
    return HttpResponse(400, {"__type": kind, "message": message})


class AwsKms(KmsHttpServer):
    """AWS KMS of one ``region`` on 127.0.0.1. ``credentials``: access key id -> secret
    access key accepted (None: any signature is accepted unchecked). ``keys``: the key ARNs
    that exist (None: any key ARN of the region). A request signed for another region, or
    for a key of another region, is refused as the real regional endpoints refuse it."""

    provider = "aws"

    def __init__(self, ssl_context: ssl.SSLContext, *,
                 credentials: Mapping[str, str] | None = None,
                 keys: set[str] | None = None, region: str = "us-east-1",
                 **kwargs: Any) -> None:
        super().__init__(ssl_context, **kwargs)
        self.credentials = None if credentials is None else dict(credentials)
        self.keys = keys
        self.region = region

    def handle(self, request: HttpRequest) -> HttpResponse:
        refusal = self._check_signature(request)
        if refusal is not None:
            return refusal
        target = request.headers.get("x-amz-target", "")
        body = request.json()
        if target == "TrentService.Encrypt":
            key_id = body["KeyId"]
            arn_region = key_id.split(":")[3] if key_id.startswith("arn:") else self.region
            if arn_region != self.region or (self.keys is not None and key_id not in self.keys):
                return _aws_error("NotFoundException", f"Key '{key_id}' does not exist")
            blob = self.wrapper.wrap(key_id, base64.b64decode(body["Plaintext"]))
            return HttpResponse(200, {"CiphertextBlob": base64.b64encode(blob).decode(),
                                      "KeyId": key_id, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
        if target == "TrentService.Decrypt":
            try:
                blob = base64.b64decode(body["CiphertextBlob"])
                plaintext = self.wrapper.unwrap(body.get("KeyId"), blob)
            except UnwrapError as exc:
                return _aws_error("InvalidCiphertextException", str(exc))
            return HttpResponse(200, {"Plaintext": base64.b64encode(plaintext).decode(),
                                      "KeyId": self.wrapper.master_key_of(blob),
                                      "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
        return _aws_error("UnknownOperationException", f"unknown target {target!r}")

    def _check_signature(self, request: HttpRequest) -> HttpResponse | None:
        """SigV4 verified as AWS does it (None: accepted)."""
        if self.credentials is None:
            return None
        match = _AUTHORIZATION.fullmatch(request.headers.get("authorization", ""))
        if match is None:
            return _aws_error("MissingAuthenticationTokenException", "no SigV4 Authorization")
        secret = self.credentials.get(match["key"])
        if secret is None:
            return _aws_error("UnrecognizedClientException",
                              "The security token included in the request is invalid.")
        date = request.headers.get("x-amz-date", "")
        _day, region, service, _terminator = match["scope"].split("/")
        if region != self.region:
            return _aws_error("InvalidSignatureException",
                              f"Credential should be scoped to a valid region, not {region!r}.")
        signed = [(name, request.headers.get(name, "")) for name in match["signed"].split(";")]
        query = request.target.partition("?")[2]
        canonical, _ = canonical_request(request.method, request.path, query, signed,
                                         request.body)
        scope = credential_scope(date, region, service)
        expected = hmac.new(signing_key(secret, date, region, service),
                            string_to_sign(date, scope, canonical).encode(), "sha256").hexdigest()
        if not hmac.compare_digest(expected, match["signature"]):
            return _aws_error("InvalidSignatureException",
                              "The request signature we calculated does not match the "
                              "signature you provided.")
        return None
