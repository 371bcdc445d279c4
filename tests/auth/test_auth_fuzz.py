"""Hypothesis: SASLprep agrees with PyMongo's (an independent implementation), and no input,
however malformed, makes the SCRAM client or the testing server fail with anything but their
documented errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.saslprep import saslprep as pymongo_saslprep

from asyncmongo.core.auth.saslprep import saslprep
from asyncmongo.core.auth.scram import ScramCache, ScramClient, ScramMechanism
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.testing.scram import SaslServer, UserDirectory

# Characters from every corner: ASCII, Latin-1, spaces, bidi, private use, unassigned, ...
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from("\u00ad\u00a0\u2003\u200b\u2168\u2163\u0627\u0628\u05d0a1 \u0007\u0221"),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(TEXT, st.booleans())
def test_saslprep_agrees_with_pymongo(text: str, allow_unassigned: bool) -> None:
    try:
        expected: Any = pymongo_saslprep(text, prohibit_unassigned_code_points=not allow_unassigned)
    except ValueError:
        expected = ValueError
    except IndexError:
        # PyMongo's bidi check indexes the prepared string: it crashes when SASLprep maps
        # the input to "" (e.g. "" or "\u00ad"), which is the correct result.
        expected = ""
    try:
        actual: Any = saslprep(text, allow_unassigned=allow_unassigned)
    except ConfigurationError:
        actual = ValueError
    assert actual == expected


SERVER_MESSAGE = st.one_of(
    st.binary(max_size=80),
    st.lists(
        st.tuples(
            st.sampled_from("rsimevx"),
            st.one_of(
                st.just("abc"),
                st.just("abcdef"),
                st.just("c2FsdA=="),
                st.just("4096"),
                st.text(max_size=10),
            ),
        ),
        max_size=5,
    ).map(lambda parts: ",".join(f"{k}={v}" for k, v in parts).encode("utf-8", "surrogatepass")),
)


@settings(max_examples=300, deadline=None)
@given(SERVER_MESSAGE, SERVER_MESSAGE)
def test_scram_client_only_raises_operation_failure(first: bytes, final: bytes) -> None:
    client = ScramClient(
        ScramMechanism.SCRAM_SHA_256, "user", b"pencil", nonce="abc", cache=ScramCache()
    )
    client.client_first()
    try:
        client.client_final(first)
        client.verify_server_final(final)
    except OperationFailure:
        return
    pytest.fail("a random server-final-message was accepted")


USERS = UserDirectory()
USERS.add_user("u", "p", iterations=4096)

COMMAND = st.fixed_dictionaries(
    {},
    optional={
        "saslStart": st.just(1),
        "saslContinue": st.just(1),
        "authenticate": st.just(1),
        "mechanism": st.sampled_from(["SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN", "X", 3]),
        "payload": st.one_of(st.binary(max_size=40), st.text(max_size=10), st.integers()),
        "conversationId": st.one_of(st.integers(0, 2), st.text(max_size=2)),
        "options": st.one_of(st.none(), st.just({"skipEmptyExchange": True})),
        "user": st.text(max_size=5),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(COMMAND, max_size=4), st.sampled_from(["admin", "$external", "x"]))
def test_testing_server_always_answers_with_a_reply(
    commands: list[dict[str, Any]], db: str
) -> None:
    server = SaslServer(USERS)
    for command in commands:
        reply = server.handle(db, command)
        assert reply["ok"] in (0.0, 1.0)
        if reply["ok"] == 0.0:
            assert isinstance(reply["code"], int) and isinstance(reply["errmsg"], str)
    for command in commands:
        answer = server.speculative_authenticate(dict(command, db=db))
        assert answer is None or "ok" not in answer
