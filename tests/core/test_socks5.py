"""The sans-I/O SOCKS5 client handshake (RFC 1928, RFC 1929), byte for byte."""

from __future__ import annotations

import pytest

from asyncmongo.core.socks5 import (
    Socks5Error,
    Socks5Handshake,
    check_credentials,
    encode_destination,
)

SUCCESS_V4 = bytes([5, 0, 0, 1, 10, 0, 0, 1, 0x04, 0x38])


def test_greeting_offers_no_auth_only_without_credentials() -> None:
    assert Socks5Handshake("db", 27017, None).start() == b"\x05\x01\x00"


def test_greeting_offers_both_methods_with_credentials() -> None:
    assert Socks5Handshake("db", 27017, ("u", "p")).start() == b"\x05\x02\x00\x02"


def test_domain_name_goes_unresolved() -> None:
    handshake = Socks5Handshake("db.example.com", 27017, None)
    handshake.start()
    request = handshake.receive_data(b"\x05\x00")
    assert request == b"\x05\x01\x00\x03\x0edb.example.com\x69\x89"
    assert not handshake.done
    assert handshake.receive_data(SUCCESS_V4) == b""
    assert handshake.done and handshake.leftover == b""


@pytest.mark.parametrize(
    ("host", "encoded"),
    [
        ("127.0.0.1", b"\x01\x7f\x00\x00\x01"),
        ("::1", b"\x04" + bytes(15) + b"\x01"),
        ("localhost", b"\x03\x09localhost"),
    ],
)
def test_destination_address_types(host: str, encoded: bytes) -> None:
    assert encode_destination(host, 1) == encoded + b"\x00\x01"


def test_too_long_host_name() -> None:
    with pytest.raises(Socks5Error, match="too long"):
        encode_destination(".".join(["a" * 60] * 5), 1)
    with pytest.raises(Socks5Error, match="cannot be sent"):
        encode_destination("a" * 64, 1)


def test_username_password_authentication() -> None:
    handshake = Socks5Handshake("h", 1, ("user", "p4ssw0rd"))
    handshake.start()
    assert handshake.receive_data(b"\x05\x02") == b"\x01\x04user\x08p4ssw0rd"
    assert handshake.receive_data(b"\x01\x00") == b"\x05\x01\x00\x03\x01h\x00\x01"
    handshake.receive_data(SUCCESS_V4)
    assert handshake.done


def test_proxy_may_choose_no_auth_when_credentials_are_offered() -> None:
    handshake = Socks5Handshake("h", 1, ("user", "pw"))
    handshake.start()
    assert handshake.receive_data(b"\x05\x00").startswith(b"\x05\x01\x00\x03")


def test_refused_credentials_name_the_user_not_the_password() -> None:
    handshake = Socks5Handshake("h", 1, ("user", "s3cret"))
    handshake.start()
    handshake.receive_data(b"\x05\x02")
    with pytest.raises(Socks5Error, match=r"'user'.*proxyUsername and proxyPassword") as info:
        handshake.receive_data(b"\x01\x01")
    assert "s3cret" not in str(info.value)


def test_no_acceptable_method_without_credentials_hints_at_them() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    with pytest.raises(Socks5Error, match="proxyUsername"):
        handshake.receive_data(b"\x05\xff")


def test_method_not_offered() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    with pytest.raises(Socks5Error, match="not offered"):
        handshake.receive_data(b"\x05\x02")


@pytest.mark.parametrize(("code", "reason"), [(1, "general"), (5, "refused"), (4, "unreach"),
                                              (42, "reply code 42")])
def test_connect_refused(code: int, reason: str) -> None:
    handshake = Socks5Handshake("db", 7, None)
    handshake.start()
    handshake.receive_data(b"\x05\x00")
    with pytest.raises(Socks5Error, match=f"could not connect to db:7: .*{reason}"):
        handshake.receive_data(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))


def test_not_a_socks5_proxy() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    with pytest.raises(Socks5Error, match="not a SOCKS5 proxy"):
        handshake.receive_data(b"HTTP/1.1 400 Bad Request\r\n")


def test_proxy_closing_is_an_error() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    with pytest.raises(Socks5Error, match="closed the connection"):
        handshake.receive_data(b"")


def test_bytes_one_at_a_time_and_leftover() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    sent = b"".join(handshake.receive_data(bytes([b])) for b in b"\x05\x00")
    assert sent.startswith(b"\x05\x01")
    reply = bytes([5, 0, 0, 3, 4]) + b"name" + b"\x00\x01" + b"extra"
    for index in range(len(reply)):
        handshake.receive_data(reply[index : index + 1])
        if handshake.done:
            break
    assert handshake.done
    assert b"extra".startswith(handshake.leftover)


def test_ipv6_bound_address_reply() -> None:
    handshake = Socks5Handshake("h", 1, None)
    handshake.start()
    handshake.receive_data(b"\x05\x00")
    handshake.receive_data(bytes([5, 0, 0, 4]) + bytes(16) + b"\x00\x01" + b"!")
    assert handshake.done and handshake.leftover == b"!"


def test_repr() -> None:
    handshake = Socks5Handshake("h", 1, ("u", "secret"))
    assert repr(handshake) == "<Socks5Handshake to h:1, idle>"


@pytest.mark.parametrize(("username", "password"), [("", "p"), ("u", "x" * 256), ("é" * 128, "p")])
def test_credential_lengths(username: str, password: str) -> None:
    with pytest.raises(ValueError, match="1 to 255 bytes"):
        check_credentials(username, password)
