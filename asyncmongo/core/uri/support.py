"""Options the connection string accepts but asyncmongo cannot honour: refused, saying why.

The URI parser accepts every value the specs call valid (the spec tests parse them); a client
refuses those whose behaviour it cannot deliver, rather than ignore them.

OCSP (ocsp-support spec): Python's ``ssl`` module cannot ask for or read a stapled OCSP
response, and before Python 3.13 does not expose the server's certificate chain, so the
issuer an OCSP request names is unknown; asyncmongo therefore checks no certificate's
revocation status. ``tlsDisableOCSPEndpointCheck=true`` and
``tlsDisableCertificateRevocationCheck=true`` ask for exactly that and are accepted;
``=false`` asks for checks asyncmongo cannot make and is refused.

serverSelectionTryOnce (server selection spec) is a mode of single-threaded drivers, which
scan the deployment inside the selecting call. asyncmongo's monitors run in the background
and selection waits for them up to serverSelectionTimeoutMS, which is what ``=false`` asks
for: it is accepted, and ``=true`` is refused.
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


def check_supported(options: ClientOptions) -> None:
    """Raise ConfigurationError, naming the option, for one this driver cannot honour."""
    given = options.options
    for name in ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"):
        if given.get(name) is False:
            raise ConfigurationError(f"{name}=false is not supported: {_NO_REVOCATION_CHECKS}")
    if given.get("serverSelectionTryOnce") is True:
        raise ConfigurationError(
            "serverSelectionTryOnce=true is not supported: it is a mode of single-threaded "
            "drivers; asyncmongo monitors in the background and server selection waits up to "
            "serverSelectionTimeoutMS (serverSelectionTryOnce=false)")
    if options.proxy_username and options.proxy_password:
        try:
            check_credentials(options.proxy_username, options.proxy_password)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
