from __future__ import annotations

import pytest

from asyncmongo.core.address import format_address, parse_address
from asyncmongo.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("a", ("a", 27017)),
        ("A.Example.COM:27018", ("a.example.com", 27018)),
        ("[::1]", ("::1", 27017)),
        ("[::1]:27019", ("::1", 27019)),
        ("/tmp/mongodb-27017.sock", ("/tmp/mongodb-27017.sock", None)),
    ],
)
def test_parse_and_format_round_trip(text: str, address: tuple[str, int | None]) -> None:
    assert parse_address(text) == address
    assert parse_address(format_address(address)) == address


@pytest.mark.parametrize("text", ["", ":1", "a:", "a:x", "a:0", "a:65536", "::1", "[::1", "[::1]x"])
def test_bad_addresses_are_configuration_errors(text: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_address(text)
