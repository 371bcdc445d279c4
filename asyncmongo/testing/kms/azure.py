"""A simulated Azure Key Vault: ``wrapkey`` / ``unwrapkey`` on
``/keys/<name>[/<version>]/...`` and the Microsoft identity platform's client-credentials
token endpoint (``/<tenantId>/oauth2/v2.0/token``), as libmongocrypt calls them for the
``azure`` provider. Key Vault requests need a Bearer token the token endpoint issued."""

from __future__ import annotations

import base64
import re
import secrets
import ssl
from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.kms.http import HttpRequest, HttpResponse, KmsHttpServer
from asyncmongo.testing.kms.wrapping import UnwrapError

__all__ = ["AzureKms"]

_TOKEN_PATH = re.compile(r"/(?P<tenant>[^/]+)/oauth2/v2\.0/token")
_KEY_PATH = re.compile(r"/keys/(?P<name>[^/]+)(?:/(?P<version>[^/]*))?/(?P<op>wrapkey|unwrapkey)")


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class AzureKms(KmsHttpServer):
    """Key Vault and its token endpoint on 127.0.0.1. ``clients``: client id -> client
    secret accepted by the token endpoint (None: any)."""

    provider = "azure"

    def __init__(self, ssl_context: ssl.SSLContext, *,
                 clients: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(ssl_context, **kwargs)
        self.clients = None if clients is None else dict(clients)
        self.tokens: set[str] = set()

    def handle(self, request: HttpRequest) -> HttpResponse:
        if _TOKEN_PATH.fullmatch(request.path):
            return self._token(request.form())
        match = _KEY_PATH.fullmatch(request.path)
        if match is None:
            return HttpResponse.error(404, f"no route {request.path}")
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.tokens:
            return HttpResponse.error(401, "Unauthorized: no valid Bearer token")
        kid = f"https://{request.headers.get('host', self.endpoint)}/keys/{match['name']}"
        if match["version"]:
            kid += f"/{match['version']}"
        value = _b64url_decode(request.json()["value"])
        if match["op"] == "wrapkey":
            return HttpResponse(200, {"kid": kid,
                                      "value": _b64url_encode(self.wrapper.wrap(kid, value))})
        try:
            plaintext = self.wrapper.unwrap(kid, value)
        except UnwrapError as exc:
            return HttpResponse.error(400, str(exc))
        return HttpResponse(200, {"kid": kid, "value": _b64url_encode(plaintext)})

    def _token(self, form: Mapping[str, str]) -> HttpResponse:
        if form.get("grant_type") != "client_credentials":
            return HttpResponse.error(400, "unsupported grant_type")
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        if self.clients is not None and self.clients.get(client_id) != secret:
            return HttpResponse(401, {"error": "invalid_client",
                                      "error_description": "AADSTS7000215: Invalid client "
                                                           "secret provided."})
        token = secrets.token_urlsafe(24)
        self.tokens.add(token)
        return HttpResponse(200, {"token_type": "Bearer", "expires_in": 3599,
                                  "access_token": token})
