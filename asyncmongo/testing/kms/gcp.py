"""A simulated GCP Cloud KMS: ``...cryptoKeys/<key>[/cryptoKeyVersions/<v>]:encrypt`` and
``:decrypt``, and the OAuth token endpoint (``/token``, the JWT-bearer grant libmongocrypt
signs with the service account's private key), as libmongocrypt calls them for the ``gcp``
provider. Cloud KMS requests need a Bearer token the token endpoint issued.

The JWT's signature is not verified (that needs the account's public key); its issuer must
be one of ``emails`` when given.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import ssl
from collections.abc import Iterable
from typing import Any

from asyncmongo.testing.kms.http import HttpRequest, HttpResponse, KmsHttpServer
from asyncmongo.testing.kms.wrapping import UnwrapError

__all__ = ["GcpKms"]

_KEY_PATH = re.compile(
    r"/v1/(?P<key>projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/:]+)"
    r"(?:/cryptoKeyVersions/[^/:]+)?:(?P<op>encrypt|decrypt)"
)
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _jwt_claims(assertion: str) -> dict[str, Any]:
    _header, claims, _signature = assertion.split(".")
    padded = claims + "=" * (-len(claims) % 4)
    claims_json: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims_json


class GcpKms(KmsHttpServer):
    """Cloud KMS and its token endpoint on 127.0.0.1. ``emails``: the service accounts
    accepted (None: any)."""

    provider = "gcp"

    def __init__(self, ssl_context: ssl.SSLContext, *, emails: Iterable[str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(ssl_context, **kwargs)
        self.emails = None if emails is None else set(emails)
        self.tokens: set[str] = set()

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/token":
            return self._token(request)
        match = _KEY_PATH.fullmatch(request.path)
        if match is None:
            return HttpResponse.error(404, f"no route {request.path}")
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.tokens:
            return HttpResponse.error(401, "Request had invalid authentication credentials.")
        body = request.json()
        if match["op"] == "encrypt":
            blob = self.wrapper.wrap(match["key"], base64.b64decode(body["plaintext"]))
            return HttpResponse(200, {"name": match["key"],
                                      "ciphertext": base64.b64encode(blob).decode()})
        try:
            plaintext = self.wrapper.unwrap(match["key"], base64.b64decode(body["ciphertext"]))
        except UnwrapError as exc:
            return HttpResponse.error(400, str(exc))
        return HttpResponse(200, {"plaintext": base64.b64encode(plaintext).decode()})

    def _token(self, request: HttpRequest) -> HttpResponse:
        form = request.form()
        if form.get("grant_type") != JWT_BEARER:
            return HttpResponse(400, {"error": "unsupported_grant_type"})
        claims = _jwt_claims(form["assertion"])
        if self.emails is not None and claims.get("iss") not in self.emails:
            return HttpResponse(400, {"error": "invalid_grant",
                                      "error_description": "Invalid JWT Signature."})
        token = secrets.token_urlsafe(24)
        self.tokens.add(token)
        return HttpResponse(200, {"access_token": token, "expires_in": 3599,
                                  "token_type": "Bearer"})
