"""The server side of MongoDB authentication, for the simulated server and for tests.

Pure objects, no I/O: the simulated server (or a test's fake connection) hands each command
document to :meth:`SaslServer.handle` and sends back the reply document it returns, exactly as a
``mongod`` would build it (``conversationId``, ``done``, ``payload`` as bytes, or ``ok: 0`` with
``code`` 18 ``AuthenticationFailed``).

- :class:`UserDirectory`: the users, stored as a server stores them: per SCRAM mechanism a salt,
  an iteration count, StoredKey and ServerKey (never the password; SCRAM-SHA-1 from MongoDB's
  MD5 digest, SCRAM-SHA-256 from the SASLprep'ed password). PLAIN users live in ``$external``
  with a password (the stand-in for LDAP); X.509 users in ``$external`` by certificate subject;
  GSSAPI users in ``$external`` by Kerberos principal, once :meth:`UserDirectory.enable_gssapi`
  gave the service keytab.
- :class:`SaslServer`: one per client connection: ``saslStart`` / ``saslContinue`` (SCRAM-SHA-1,
  SCRAM-SHA-256 with or without ``skipEmptyExchange``, PLAIN, GSSAPI), ``authenticate``
  (MONGODB-X509), the hello's ``speculativeAuthenticate`` and ``saslSupportedMechs``
  (:meth:`SaslServer.hello_fields`).

A server plays mongod with one :class:`SaslServer` per client connection::

    sasl = SaslServer(users)                       # when the connection is accepted
    reply.update(sasl.hello_fields(hello_command))   # in the hello reply
    if SaslServer.handles(name):                   # saslStart / saslContinue / authenticate
        reply = sasl.handle(db, command_without_dollar_db)
    sasl.authenticated_users                       # who may run what (empty: Unauthorized)

Randomness (salts, server nonces) comes from an injectable ``rng(n) -> bytes``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asyncmongo.bson import decode, encode
from asyncmongo.core.auth.scram import (
    MIN_ITERATIONS,
    ScramMechanism,
    derive_keys,
    parse_attributes,
    prepare_password,
    unescape_username,
)
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.testing.aws import AwsServerConversation
from asyncmongo.testing.kerberos import GssapiAcceptor
from asyncmongo.testing.oidc import TestIdentityProvider

__all__ = [
    "DEFAULT_ITERATIONS",
    "SaslServer",
    "StoredScramCredential",
    "User",
    "UserDirectory",
]

#: mongod's defaults (scramIterationCount, scramSHA256IterationCount).
DEFAULT_ITERATIONS: Mapping[ScramMechanism, int] = {
    ScramMechanism.SCRAM_SHA_1: 10000,
    ScramMechanism.SCRAM_SHA_256: 15000,
}
_SALT_SIZE = {ScramMechanism.SCRAM_SHA_1: 16, ScramMechanism.SCRAM_SHA_256: 28}
EXTERNAL = "$external"
PLAIN = "PLAIN"
MONGODB_X509 = "MONGODB-X509"
GSSAPI = "GSSAPI"
MONGODB_AWS = "MONGODB-AWS"
MONGODB_OIDC = "MONGODB-OIDC"

Rng = Callable[[int], bytes]


@dataclass(frozen=True, slots=True)
class StoredScramCredential:
    """What a server keeps for one SCRAM mechanism of one user (RFC 5802 section 3)."""

    mechanism: ScramMechanism
    salt: bytes
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)

    @classmethod
    def create(
        cls,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        *,
        salt: bytes,
        iterations: int,
    ) -> StoredScramCredential:
        """Derive the stored keys, preparing the password as mongod does."""
        keys = derive_keys(
            mechanism, prepare_password(mechanism, username, password), salt, iterations
        )
        return cls(mechanism, salt, iterations, keys.stored_key, keys.server_key)


@dataclass(frozen=True, slots=True)
class User:
    """A user of the simulated server."""

    db: str
    name: str
    scram: Mapping[str, StoredScramCredential] = field(default_factory=dict)
    plain_password: str | None = field(default=None, repr=False)
    x509: bool = False
    gssapi: bool = False
    #: MONGODB-AWS: the credentials whose signatures authenticate as this user (its name is
    #: the IAM ARN, as mongod names AWS users).
    aws_keys: tuple[AwsCredentials, ...] = field(default=(), repr=False)

    @property
    def mechanisms(self) -> list[str]:
        """The mechanisms as hello's ``saslSupportedMechs`` lists them."""
        names = sorted(self.scram)
        if self.plain_password is not None:
            names.append(PLAIN)
        if self.gssapi:
            names.append(GSSAPI)
        return names


class UserDirectory:
    """The users of a simulated deployment, keyed by (database, name)."""

    __slots__ = ("_iterations", "_rng", "_users", "aws_sts_host", "gssapi_keytab",
                 "oidc_providers")

    def __init__(
        self,
        *,
        rng: Rng = secrets.token_bytes,
        iterations: Mapping[ScramMechanism, int] | None = None,
    ) -> None:
        self._rng = rng
        self._iterations = dict(DEFAULT_ITERATIONS if iterations is None else iterations)
        self._users: dict[tuple[str, str], User] = {}
        #: The keytab with the service principal GSSAPI authenticates against (None: GSSAPI
        #: is not enabled, as on a mongod without Kerberos).
        self.gssapi_keytab: Path | None = None
        #: The STS host the server names in MONGODB-AWS's server-first message.
        self.aws_sts_host = "sts.amazonaws.com"
        #: MONGODB-OIDC: the identity providers whose tokens the server accepts, each with
        #: the principal-name pattern that selects it (mongod's oidcIdentityProviders
        #: ``matchPattern``; None: any). Any subject their tokens name is a ``$external`` user.
        self.oidc_providers: list[tuple[TestIdentityProvider, str | None]] = []

    def enable_oidc(
        self, provider: TestIdentityProvider | None = None, *, match_pattern: str | None = None
    ) -> TestIdentityProvider:
        """Accept MONGODB-OIDC tokens of ``provider`` (a new one by default; returned). With
        several providers, a two-step conversation picks the one whose ``match_pattern`` (a
        regular expression) matches the principal name, and a token is checked by the
        provider of its issuer."""
        provider = provider if provider is not None else TestIdentityProvider()
        self.oidc_providers.append((provider, match_pattern))
        return provider

    @property
    def oidc(self) -> TestIdentityProvider | None:
        """The first identity provider (None: MONGODB-OIDC is not enabled)."""
        return self.oidc_providers[0][0] if self.oidc_providers else None

    def oidc_provider_for_principal(self, name: str | None) -> TestIdentityProvider | None:
        """The provider a PrincipalStepRequest selects (mongod: with several providers, a
        principal name matching one's pattern is required)."""
        providers = self.oidc_providers
        if len(providers) == 1:
            return providers[0][0]
        for provider, pattern in providers:
            if name is not None and (pattern is None or re.search(pattern, name)):
                return provider
        return None

    def oidc_provider_for_issuer(self, issuer: object) -> TestIdentityProvider | None:
        for provider, _ in self.oidc_providers:
            if provider.issuer == issuer:
                return provider
        return self.oidc

    @property
    def requires_auth(self) -> bool:
        """Whether commands need an authenticated connection (users exist or OIDC is on)."""
        return bool(self._users) or bool(self.oidc_providers)

    def add_user(
        self,
        name: str,
        password: str,
        *,
        db: str = "admin",
        mechanisms: Iterable[str] = ("SCRAM-SHA-1", "SCRAM-SHA-256"),
        iterations: int | None = None,
    ) -> User:
        """Create (or replace) a SCRAM user, like ``createUser`` with ``mechanisms``."""
        scram: dict[str, StoredScramCredential] = {}
        for name_of_mechanism in mechanisms:
            try:
                mechanism = ScramMechanism(name_of_mechanism)
            except ValueError:
                raise ConfigurationError(
                    f"not a SCRAM mechanism: {name_of_mechanism!r}"
                ) from None
            count = iterations if iterations is not None else self._iterations[mechanism]
            if count < MIN_ITERATIONS:
                raise ConfigurationError(f"iterations must be at least {MIN_ITERATIONS}")
            scram[mechanism.value] = StoredScramCredential.create(
                mechanism, name, password, salt=self._rng(_SALT_SIZE[mechanism]), iterations=count
            )
        if not scram:
            raise ConfigurationError("a SCRAM user needs at least one mechanism")
        return self._put(User(db, name, scram))

    def add_plain_user(self, name: str, password: str) -> User:
        """A ``$external`` user that authenticates with PLAIN (the stand-in for LDAP)."""
        return self._put(User(EXTERNAL, name, plain_password=password))

    def enable_gssapi(self, keytab: Path | str) -> None:
        """Accept GSSAPI with the service key in ``keytab`` (mongod's KRB5_KTNAME)."""
        self.gssapi_keytab = Path(keytab)

    def add_gssapi_user(self, principal: str) -> User:
        """A ``$external`` user authenticated by Kerberos as ``principal`` (``name@REALM``)."""
        return self._put(User(EXTERNAL, principal, gssapi=True))

    def add_x509_user(self, subject: str) -> User:
        """A ``$external`` user identified by a certificate subject (RFC 2253 form)."""
        return self._put(User(EXTERNAL, subject, x509=True))

    def add_aws_user(self, arn: str, *credentials: AwsCredentials) -> User:
        """A ``$external`` user named by an IAM ARN, authenticated by MONGODB-AWS requests
        signed with any of ``credentials`` (added to those it already has)."""
        existing = self.get(EXTERNAL, arn)
        keys = (existing.aws_keys if existing is not None else ()) + credentials
        return self._put(User(EXTERNAL, arn, aws_keys=keys))

    def aws_key(self, access_key_id: str) -> tuple[User, AwsCredentials] | None:
        """The user and the known credentials of ``access_key_id``, or None."""
        for user in self._users.values():
            for credentials in user.aws_keys:
                if credentials.access_key_id == access_key_id:
                    return user, credentials
        return None

    def remove_user(self, name: str, *, db: str = "admin") -> None:
        self._users.pop((db, name), None)

    def get(self, db: str, name: str) -> User | None:
        return self._users.get((db, name))

    def sasl_supported_mechs(self, namespace: str) -> list[str] | None:
        """hello's ``saslSupportedMechs`` for ``"<db>.<user>"``; None (field omitted) for an
        unknown user, as mongod does."""
        db, sep, name = namespace.partition(".")
        user = self.get(db, name) if sep else None
        return user.mechanisms if user is not None else None

    def __len__(self) -> int:
        return len(self._users)

    def __repr__(self) -> str:
        return f"<UserDirectory {len(self._users)} users>"

    def _put(self, user: User) -> User:
        self._users[(user.db, user.name)] = user
        return user


class _ScramServerConversation:
    """The server's half of one SCRAM exchange."""

    __slots__ = (
        "_auth_message",
        "_credential",
        "_gs2_header",
        "_nonce",
        "_skip_empty_exchange",
        "_stage",
        "user",
    )

    def __init__(
        self,
        user: User,
        credential: StoredScramCredential,
        gs2_header: bytes,
        auth_message_start: bytes,
        nonce: str,
        skip_empty_exchange: bool,
    ) -> None:
        self.user = user
        self._credential = credential
        self._gs2_header = gs2_header
        self._auth_message = auth_message_start
        self._nonce = nonce
        self._skip_empty_exchange = skip_empty_exchange
        self._stage = 1

    def server_first(self) -> bytes:
        salt = base64.b64encode(self._credential.salt).decode()
        message = f"r={self._nonce},s={salt},i={self._credential.iterations}".encode()
        self._auth_message += b"," + message
        return message

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        """(payload, done) for the client's next message; OperationFailure if it fails."""
        if self._stage == 1:
            self._stage = 2
            return self._server_final(payload), self._skip_empty_exchange
        if self._stage == 2 and not self._skip_empty_exchange and payload == b"":
            self._stage = 3
            return b"", True
        raise OperationFailure("SCRAM: unexpected message after the conversation ended", 17)

    def _server_final(self, client_final: bytes) -> bytes:
        without_proof, sep, proof_text = client_final.rpartition(b",p=")
        attributes = parse_attributes(without_proof, "client-final-message") if sep else {}
        if attributes.get("c") != base64.b64encode(self._gs2_header).decode():
            raise _auth_failed()
        if attributes.get("r") != self._nonce:
            raise _auth_failed()
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except binascii.Error:
            raise _auth_failed() from None
        mechanism = self._credential.mechanism
        auth_message = self._auth_message + b"," + without_proof
        signature = hmac.digest(self._credential.stored_key, auth_message, mechanism.hash_name)
        if len(proof) != len(signature):
            raise _auth_failed()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
        if not hmac.compare_digest(stored_key, self._credential.stored_key):
            raise _auth_failed()
        server_signature = hmac.digest(
            self._credential.server_key, auth_message, mechanism.hash_name
        )
        return b"v=" + base64.b64encode(server_signature)


class _GssapiServerConversation:
    """A GSSAPI exchange whose user is known at its end: the ``$external`` user named by the
    authenticated principal."""

    __slots__ = ("_acceptor", "_users", "user")

    def __init__(self, acceptor: GssapiAcceptor, users: UserDirectory) -> None:
        self._acceptor = acceptor
        self._users = users
        self.user: User | None = None

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        answer, done = self._acceptor.step(payload)
        if done:
            principal = self._acceptor.principal or ""
            user = self._users.get(EXTERNAL, principal)
            if user is None or not user.gssapi:
                raise _auth_failed()
            self.user = user
        return answer, done


class SaslServer:
    """The authentication state of one client connection, as a mongod keeps it."""

    __slots__ = (
        "_authenticated",
        "_conversation",
        "_conversation_id",
        "_oidc_clock",
        "_oidc_pending",
        "_rng",
        "_users",
        "oidc_expires_at",
    )

    def __init__(self, users: UserDirectory, *, rng: Rng = secrets.token_bytes) -> None:
        self._users = users
        self._rng = rng
        self._conversation: (
            _ScramServerConversation | _GssapiServerConversation
            | AwsServerConversation[User] | None
        ) = None
        self._conversation_id = 0
        self._authenticated: list[User] = []
        #: A two-step MONGODB-OIDC conversation waits for its JwtStepRequest.
        self._oidc_pending = False
        #: When the token this connection authenticated with expires (None: not OIDC); past
        #: it, commands get ReauthenticationRequired (391).
        self.oidc_expires_at: float | None = None
        self._oidc_clock: Callable[[], float] | None = None

    def reauthentication_required(self) -> bool:
        """The connection's OIDC token has expired: its next command gets 391."""
        clock = self._oidc_clock
        expires = self.oidc_expires_at
        return clock is not None and expires is not None and expires <= clock()

    @property
    def authenticated_users(self) -> list[User]:
        """The users this connection has authenticated as."""
        return list(self._authenticated)

    @staticmethod
    def handles(command_name: str) -> bool:
        """Whether :meth:`handle` answers this command."""
        return command_name in ("saslStart", "saslContinue", "authenticate")

    def handle(
        self, db: str, command: Mapping[str, Any], *, peer_subject: str | None = None
    ) -> dict[str, Any]:
        """Answer ``saslStart``, ``saslContinue`` or ``authenticate`` sent to ``db``.

        ``peer_subject`` is the TLS client certificate's subject (MONGODB-X509).
        """
        try:
            if "saslStart" in command:
                return _payload_as_sent(command, self._sasl_start(db, command))
            if "saslContinue" in command:
                return _payload_as_sent(command, self._sasl_continue(command))
            if "authenticate" in command:
                return self._authenticate(db, command, peer_subject)
            raise OperationFailure("not an authentication command", 59)
        except OperationFailure as exc:
            self._conversation = None
            return _error_reply(exc)

    def speculative_authenticate(
        self, document: Mapping[str, Any], *, peer_subject: str | None = None
    ) -> dict[str, Any] | None:
        """The hello reply's ``speculativeAuthenticate`` value for the hello's document, or
        None (field omitted) when it fails: the client then authenticates normally."""
        db = EXTERNAL if "authenticate" in document else document.get("db")
        if not isinstance(db, str):
            return None
        command = {key: value for key, value in document.items() if key != "db"}
        reply = self.handle(db, command, peer_subject=peer_subject)
        if reply.get("ok") != 1:
            return None
        return {key: value for key, value in reply.items() if key != "ok"}

    def sasl_supported_mechs(self, namespace: str) -> list[str] | None:
        """hello's ``saslSupportedMechs`` for ``"<db>.<user>"`` (None: omit the field)."""
        return self._users.sasl_supported_mechs(namespace)

    def hello_fields(
        self, hello: Mapping[str, Any], *, peer_subject: str | None = None
    ) -> dict[str, Any]:
        """The authentication fields of the reply to ``hello`` (or legacy hello), to merge
        into it: ``saslSupportedMechs`` when asked and the user exists, and
        ``speculativeAuthenticate`` when asked and the speculative step succeeded."""
        fields: dict[str, Any] = {}
        namespace = hello.get("saslSupportedMechs")
        if isinstance(namespace, str):
            mechs = self.sasl_supported_mechs(namespace)
            if mechs is not None:
                fields["saslSupportedMechs"] = mechs
        document = hello.get("speculativeAuthenticate")
        if isinstance(document, Mapping):
            answer = self.speculative_authenticate(document, peer_subject=peer_subject)
            if answer is not None:
                fields["speculativeAuthenticate"] = answer
        return fields

    def _sasl_start(self, db: str, command: Mapping[str, Any]) -> dict[str, Any]:
        mechanism = command.get("mechanism")
        payload = _payload(command)
        self._conversation = None
        self._oidc_pending = False
        self._conversation_id += 1
        if mechanism == MONGODB_OIDC and self._users.oidc is not None:
            return self._oidc_start(db, payload)
        if mechanism == PLAIN:
            self._plain(db, payload)
            return self._reply(b"", done=True)
        if mechanism == GSSAPI and self._users.gssapi_keytab is not None:
            if db != EXTERNAL:
                raise _auth_failed()
            gssapi = _GssapiServerConversation(
                GssapiAcceptor(self._users.gssapi_keytab), self._users)
            self._conversation = gssapi
            answer, _ = gssapi.step(payload)
            return self._reply(answer, done=False)
        if mechanism == MONGODB_AWS:
            if db != EXTERNAL:
                raise _auth_failed()
            aws = AwsServerConversation(
                self._users.aws_key, self._users.aws_sts_host, payload, self._rng
            )
            self._conversation = aws
            return self._reply(aws.server_first(), done=False)
        try:
            scram = ScramMechanism(mechanism)
        except ValueError:
            raise OperationFailure(
                f"Received authentication for mechanism {mechanism} which is not enabled",
                334,
                {"codeName": "MechanismUnavailable"},
            ) from None
        options = command.get("options")
        skip = isinstance(options, Mapping) and options.get("skipEmptyExchange") is True
        conversation = self._start_scram(db, scram, payload, skip)
        self._conversation = conversation
        return self._reply(conversation.server_first(), done=False)

    def _sasl_continue(self, command: Mapping[str, Any]) -> dict[str, Any]:
        if self._oidc_pending and command.get("conversationId") == self._conversation_id:
            self._oidc_pending = False
            self._oidc_jwt(_bson_payload(_payload(command)))
            return self._reply(b"", done=True)
        conversation = self._conversation
        if conversation is None or command.get("conversationId") != self._conversation_id:
            raise OperationFailure("No SASL session state found", 17)
        payload, done = conversation.step(_payload(command))
        if done and conversation.user is not None:
            self._conversation = None
            assert conversation.user is not None
            self._authenticated.append(conversation.user)
        return self._reply(payload, done=done)

    def _oidc_start(self, db: str, payload: bytes) -> dict[str, Any]:
        """MONGODB-OIDC saslStart: a JwtStepRequest authenticates at once (one step); a
        PrincipalStepRequest is answered with the IdpInfo (two steps, the human flow)."""
        if db != EXTERNAL:
            raise _auth_failed()
        request = _bson_payload(payload)
        if "jwt" in request:
            self._oidc_jwt(request)
            return self._reply(b"", done=True)
        principal = request.get("n")
        oidc = self._users.oidc_provider_for_principal(
            principal if isinstance(principal, str) else None
        )
        if oidc is None:
            raise _auth_failed()  # mongod: no identity provider for this principal name
        self._oidc_pending = True
        return self._reply(encode(oidc.idp_info()), done=False)

    def _oidc_jwt(self, request: Mapping[str, Any]) -> None:
        token = request.get("jwt")
        if not isinstance(token, str):
            raise _auth_failed()
        oidc = self._users.oidc_provider_for_issuer(_unverified_issuer(token))
        if oidc is None:
            raise _auth_failed()
        verified = oidc.verify(token)
        self._oidc_clock = oidc.clock
        user = User(EXTERNAL, verified.subject)
        self._authenticated = [u for u in self._authenticated if u.db != EXTERNAL] + [user]
        self.oidc_expires_at = verified.expires_at

    def _start_scram(
        self, db: str, mechanism: ScramMechanism, client_first: bytes, skip: bool
    ) -> _ScramServerConversation:
        cbind_flag, authzid, bare = _split_client_first(client_first)
        attributes = parse_attributes(bare, "client-first-message")
        name = attributes.get("n")
        client_nonce = attributes.get("r")
        if name is None or not client_nonce or cbind_flag not in (b"n", b"y"):
            raise _auth_failed()
        if authzid not in (b"", b"a=" + name.encode()):
            raise _auth_failed()  # mongod: no authorization identity other than the user
        user = self._users.get(db, unescape_username(name))
        if user is None:
            raise _auth_failed()
        credential = user.scram.get(mechanism.value)
        if credential is None:
            raise OperationFailure(
                f"Unable to use {mechanism.value} based authentication for user without any "
                f"{mechanism.value} credentials registered",
                334,
                {"codeName": "MechanismUnavailable"},
            )
        nonce = client_nonce + base64.b64encode(self._rng(24)).decode()
        gs2_header = cbind_flag + b",,"
        return _ScramServerConversation(user, credential, gs2_header, bare, nonce, skip)

    def _plain(self, db: str, payload: bytes) -> None:
        parts = payload.split(b"\x00")
        if db != EXTERNAL or len(parts) != 3:
            raise _auth_failed()
        try:
            authzid, name, password = (part.decode() for part in parts)
        except UnicodeDecodeError:
            raise _auth_failed() from None
        user = self._users.get(EXTERNAL, name)
        if (
            user is None
            or user.plain_password is None
            or authzid not in ("", name)
            or not hmac.compare_digest(user.plain_password.encode(), password.encode())
        ):
            raise _auth_failed()
        self._authenticated.append(user)

    def _authenticate(
        self, db: str, command: Mapping[str, Any], peer_subject: str | None
    ) -> dict[str, Any]:
        if command.get("mechanism") != MONGODB_X509:
            raise OperationFailure(
                f"Received authentication for mechanism {command.get('mechanism')} which is "
                "not enabled",
                334,
                {"codeName": "MechanismUnavailable"},
            )
        requested = command.get("user")
        if db != EXTERNAL or peer_subject is None:
            raise _auth_failed()
        if requested is not None and requested != peer_subject:
            raise _auth_failed()
        user = self._users.get(EXTERNAL, peer_subject)
        if user is None or not user.x509:
            raise _auth_failed()
        self._authenticated.append(user)
        return {"dbname": EXTERNAL, "user": peer_subject, "ok": 1.0}

    def _reply(self, payload: bytes, *, done: bool) -> dict[str, Any]:
        return {
            "conversationId": self._conversation_id,
            "done": done,
            "payload": payload,
            "ok": 1.0,
        }

    def __repr__(self) -> str:
        names = [f"{user.db}.{user.name}" for user in self._authenticated]
        state = "in conversation" if self._conversation is not None else "idle"
        return f"<SaslServer {state}, authenticated as {names}>"


def _split_client_first(message: bytes) -> tuple[bytes, bytes, bytes]:
    """gs2-cbind-flag, authzid (``a=...`` or empty), client-first-message-bare."""
    parts = message.split(b",", 2)
    if len(parts) != 3:
        raise _auth_failed()
    flag, authzid, bare = parts
    return flag, authzid, bare


def _payload(command: Mapping[str, Any]) -> bytes:
    payload = command.get("payload", b"")
    if isinstance(payload, str):  # some clients send base64 text
        try:
            return base64.b64decode(payload, validate=True)
        except ValueError:  # binascii.Error, or non-ASCII text
            raise OperationFailure("Invalid SASL payload", 2, {"codeName": "BadValue"}) from None
    if isinstance(payload, bytes | bytearray | memoryview):
        return bytes(payload)
    raise OperationFailure("Invalid SASL payload", 2, {"codeName": "BadValue"})


def _payload_as_sent(command: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """mongod answers a base64 text payload (pykerberos-based clients send one) in base64 text,
    and a binary payload in binary."""
    payload = reply.get("payload")
    if isinstance(command.get("payload"), str) and isinstance(payload, bytes):
        reply["payload"] = base64.b64encode(payload).decode()
    return reply
def _unverified_issuer(token: str) -> object:
    """The ``iss`` claim, read before verification only to pick the provider that verifies."""
    try:
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    except (ValueError, IndexError):
        return None
    return claims.get("iss") if isinstance(claims, dict) else None


def _bson_payload(payload: bytes) -> dict[str, Any]:
    try:
        document = decode(payload)
    except Exception:
        raise OperationFailure("Invalid SASL payload", 2, {"codeName": "BadValue"}) from None
    return dict(document)


def _auth_failed() -> OperationFailure:
    return OperationFailure("Authentication failed.", 18, {"codeName": "AuthenticationFailed"})


def _error_reply(exc: OperationFailure) -> dict[str, Any]:
    # An error without a code comes from a malformed client message: to the client that is
    # an authentication failure like any other.
    code = exc.code if exc.code is not None else 18
    names = {17: "ProtocolError", 18: "AuthenticationFailed", 59: "CommandNotFound"}
    return {
        "ok": 0.0,
        "errmsg": str(exc.args[0]) if exc.args else "Authentication failed.",
        "code": code,
        "codeName": exc.code_name or names.get(code, "UnknownError"),
    }
