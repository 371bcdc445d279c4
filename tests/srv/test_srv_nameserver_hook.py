"""The internal test hook that points default DNS resolvers (the client's) at a test server."""

from __future__ import annotations

from asyncmongo.runtime import srv
from asyncmongo.runtime.srv import DnspythonResolver, dns_nameservers_for_tests


def _nameservers(resolver: DnspythonResolver) -> tuple[list[str], int]:
    inner = resolver._resolver  # the dnspython resolver it wraps
    return [str(server) for server in inner.nameservers], int(inner.port)


def test_default_resolvers_use_the_test_nameservers_inside_the_block_only() -> None:
    with dns_nameservers_for_tests(["127.0.0.1"], 5353):
        assert _nameservers(DnspythonResolver()) == (["127.0.0.1"], 5353)
        with dns_nameservers_for_tests(["127.0.0.2"], 5354):  # nests
            assert _nameservers(DnspythonResolver()) == (["127.0.0.2"], 5354)
        assert _nameservers(DnspythonResolver()) == (["127.0.0.1"], 5353)
        # explicit nameservers always win
        assert _nameservers(DnspythonResolver(["127.0.0.9"], 53)) == (["127.0.0.9"], 53)
    assert _nameservers(DnspythonResolver(["127.0.0.9"], 53)) == (["127.0.0.9"], 53)
    assert srv._test_nameservers is None
