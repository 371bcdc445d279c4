"""``parse``: a connection string (plus keyword options) to ClientOptions.

Precedence, lowest to highest: defaults, TXT record (mongodb+srv only, applied later by
``apply_srv_records``), the connection string, keyword arguments.
"""

from __future__ import annotations

from typing import Any

from asyncmongo.core.uri.client_options import ClientOptions, build_client_options
from asyncmongo.core.uri.collect import collect_kwargs, collect_pairs
from asyncmongo.core.uri.rules import check_combination
from asyncmongo.core.uri.split import SplitUri, split_uri

__all__ = ["parse", "parse_lenient", "parse_uri_options"]


def parse(uri: str, /, **kwargs: Any) -> ClientOptions:
    """Parse and validate ``uri``; ``kwargs`` are URI option names (any case, or snake_case)
    and override the URI's values; ``username``, ``password`` and ``server_api`` are
    keyword-only extras.

    Any malformed part or invalid value raises ConfigurationError (InvalidURI for syntax);
    unknown options and deprecated names only warn (ConfigurationWarning,
    DeprecatedOptionWarning). A ``mongodb+srv://`` URI is not resolved here: the result has
    ``is_srv=True``, ``srv_host`` and no hosts until ``apply_srv_records``.
    """
    return _parse(uri, kwargs, lenient=False)


def parse_lenient(uri: str, /, **kwargs: Any) -> ClientOptions:
    """Like ``parse``, but an invalid value in the URI is ignored with a ConfigurationWarning,
    as the connection-string spec describes ("Any invalid Values for a given key MUST be
    ignored and MUST log a WARN level message"). Keyword arguments are still strict.
    """
    return _parse(uri, kwargs, lenient=True)


def parse_uri_options(uri: str, /, *, lenient: bool = False) -> tuple[SplitUri, dict[str, Any]]:
    """The parsing stage alone: the URI's parts and its options, each validated and checked
    against the others, but no credential built and no ClientOptions.

    This is what the connection-string and uri-options spec tests exercise ("Doing so may
    require exposing the driver's URI parsing component"): e.g. a URI whose invalid
    authMechanismProperties are ignored with a warning is a valid URI, even though the
    credential it leaves behind is incomplete and ``parse`` rejects it.
    """
    parts = split_uri(uri)
    options = collect_pairs(parts.options, lenient=lenient, where="connection string")
    check_combination(options, hosts=parts.hosts, is_srv=parts.is_srv, resolved=not parts.is_srv)
    return parts, options


def _parse(uri: str, kwargs: dict[str, Any], *, lenient: bool) -> ClientOptions:
    parts = split_uri(uri)
    options = collect_pairs(parts.options, lenient=lenient, where="connection string")
    overrides, extras = collect_kwargs(kwargs)
    options.update(overrides)
    # username=/password= keywords override the userinfo (PyMongo's MongoClient accepts them).
    username = extras.get("username", parts.username)
    password = extras.get("password", parts.password)
    return build_client_options(
        hosts=parts.hosts,
        options=options,
        is_srv=parts.is_srv,
        srv_host=parts.srv_host,
        database=parts.database,
        username=username,
        password=password,
        userinfo_given=parts.userinfo_given or username is not None,
        extras=extras,
        resolved=not parts.is_srv,
    )
