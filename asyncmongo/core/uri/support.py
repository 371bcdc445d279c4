"""Options the connection string accepts but asyncmongo cannot honour: refused, saying why.

The URI parser accepts every value the specs call valid (the spec tests parse them); a client
refuses those whose behaviour it cannot deliver, rather than ignore them.

OCSP (ocsp-support spec): Python's ``ssl`` module cannot ask for or read a stapled OCSP
response, and before Python 3.13 does not expose the server's certificate chain, so the
issuer an OCSP request names is unknown; asyncmongo therefore checks no certificate's
revocation status. ``tlsDisableOCSPEndpointCheck=true`` and
``tlsDisableCertificateRevocationCheck=true`` ask for exactly that and are accepted;
``=false`` asks for checks asyncmongo cannot make and is refused.

The same rule for the options of behaviours asyncmongo does not have: a value asking for what
it does is accepted, any other is refused. ``serverSelectionTryOnce`` is for single-threaded
drivers (server selection spec); asyncmongo monitors in the background and keeps selecting
until ``serverSelectionTimeoutMS``, which ``false`` describes.
"""

from __future__ import annotations

from asyncmongo.core.socks5 import check_credentials
from asyncmongo.core.uri.client_options import ClientOptions
from asyncmongo.errors import ConfigurationError

__all__ = ["check_supported"]

_NO_REVOCATION_CHECKS = (
    "asyncmongo does not check certificate revocation: Python's ssl module can neither "
    "request a stapled OCSP response nor expose the server's certificate chain to query an "
    "OCSP responder. Leave the option out, or set it to true"
)


#: (option, the one value that describes what asyncmongo does, why others are refused)
_NOT_IMPLEMENTED: tuple[tuple[str, object, str], ...] = (
    (
        "serverSelectionTryOnce",
        False,
        "it applies to single-threaded drivers; asyncmongo monitors servers in the background "
        "and keeps selecting until serverSelectionTimeoutMS",
    ),
)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_supported(options: ClientOptions) -> None:
    """Raise ConfigurationError, naming the option, for one this driver cannot honour."""
    given = options.options
    for name in ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"):
        if given.get(name) is False:
            raise ConfigurationError(f"{name}=false is not supported: {_NO_REVOCATION_CHECKS}")
    for name, accepted, reason in _NOT_IMPLEMENTED:
        if name in given and given[name] != accepted:
            raise ConfigurationError(f"{name}={_text(given[name])} is not supported: {reason}")
    if options.proxy_username and options.proxy_password:
        try:
            check_credentials(options.proxy_username, options.proxy_password)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
