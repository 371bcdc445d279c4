"""Options the parser accepts but the client cannot honour are refused, saying why:
tlsDisableOCSPEndpointCheck / tlsDisableCertificateRevocationCheck set to false ask for
revocation checks Python's ssl module cannot make; true asks for what asyncmongo does."""

from __future__ import annotations

import pytest

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.uri import parse
from asyncmongo.errors import ConfigurationError

OCSP_OPTIONS = ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck")


@pytest.mark.parametrize("name", OCSP_OPTIONS)
def test_false_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{name}=false is not supported.*ssl module"):
        AsyncMongoClient(f"mongodb://h/?tls=true&{name}=false")
    with pytest.raises(ConfigurationError, match=name):
        AsyncMongoClient("mongodb://h/?tls=true", **{name: False})


@pytest.mark.parametrize("name", OCSP_OPTIONS)
def test_true_is_what_asyncmongo_does(name: str) -> None:
    client = AsyncMongoClient(f"mongodb://h/?tls=true&{name}=true")
    assert client.options.options[name] is True


@pytest.mark.parametrize("name", OCSP_OPTIONS)
def test_the_parser_accepts_both_values(name: str) -> None:
    # uri-options tls-options.json: "... can be set to false" is a valid connection string
    assert parse(f"mongodb://h/?tls=true&{name}=false").options[name] is False


def test_left_out_is_accepted() -> None:
    AsyncMongoClient("mongodb://h/?tls=true")
    AsyncMongoClient("mongodb://h/?tlsInsecure=true")
