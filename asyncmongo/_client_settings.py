"""The client's own keywords: codec options (PyMongo's), ``observe_events``, ``tracing`` and
``connect``.

The connection string cannot set codec options, as in PyMongo, except uuidRepresentation;
:func:`split_api_options` separates these keywords from the URI options, and
:func:`codec_options` builds the client's CodecOptions from them. ``connect`` is checked
and has no effect, as in PyMongo's AsyncMongoClient: the client connects on its first
operation or ``await client.aconnect()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.types import UuidRepresentation
from asyncmongo.errors import ConfigurationError

__all__ = ["check_address_arguments", "codec_options", "split_api_options"]

_CODEC_KEYWORDS = {
    "document_class": "document_class",
    "tz_aware": "tz_aware",
    "tzinfo": "tzinfo",
    "uuidrepresentation": "uuid_representation",
    "uuid_representation": "uuid_representation",
    "unicode_decode_error_handler": "unicode_decode_error_handler",
    "datetime_conversion": "datetime_conversion",
    "type_registry": "type_registry",
}

#: The client's own keywords besides the codec options (``tracing``: OpenTelemetry).
_CLIENT_KEYWORDS = frozenset({"observe_events", "tracing"})


def split_api_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the API's own keywords: codec options, ``observe_events`` and ``tracing``, the rest
    for the URI parser; ``connect`` is checked and goes to neither). The connection string itself
    cannot set codec options, as in PyMongo, except uuidRepresentation (the URI parser
    validates it; a keyword here overrides it)."""
    api: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in options.items():
        if key == "connect":
            _check_connect(value)
        elif key.lower() in _CODEC_KEYWORDS or key in _CLIENT_KEYWORDS:
            api[key] = value
        else:
            rest[key] = value
    return api, rest


def check_address_arguments(host_or_uri: object, port: object, listeners: object) -> None:
    """The constructor's own arguments have the right types: a bad one is a
    ConfigurationError like any other bad setting (not the TypeError of whatever first
    trips over it)."""
    if not isinstance(host_or_uri, str):
        raise ConfigurationError(
            f"host must be a connection string or a host name (str), not "
            f"{type(host_or_uri).__name__}")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
        raise ConfigurationError(f"port must be an int, not {type(port).__name__}")
    if not isinstance(listeners, Iterable) or isinstance(listeners, str | bytes):
        raise ConfigurationError(
            f"event_listeners must be an iterable of listeners, not {type(listeners).__name__}")


def _check_connect(value: Any) -> None:
    """PyMongo's check of ``connect``: a bool, "true" or "false" (None: not given)."""
    if value is not None and not isinstance(value, bool) and value not in ("true", "false"):
        raise ConfigurationError(f"connect must be True or False, not {value!r}")


#: uuidRepresentation spellings (uri-options spec, PyMongo's), folded to lower case.
_UUID_REPRESENTATIONS = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonlegacy": UuidRepresentation.PYTHON_LEGACY,
    "javalegacy": UuidRepresentation.JAVA_LEGACY,
    "csharplegacy": UuidRepresentation.CSHARP_LEGACY,
}


def codec_options(api: Mapping[str, Any], uri_uuid_representation: str) -> CodecOptions:
    """The client's codec options: the keywords, else the URI's uuidRepresentation."""
    kwargs = {
        _CODEC_KEYWORDS[key.lower()]: value for key, value in api.items()
        if key not in _CLIENT_KEYWORDS
    }
    uuid = kwargs.setdefault("uuid_representation", uri_uuid_representation)
    if isinstance(uuid, str):
        representation = _UUID_REPRESENTATIONS.get(uuid.lower())
        if representation is None:
            raise ConfigurationError(
                f"unknown uuidRepresentation {uuid!r}; expected one of "
                "unspecified, standard, pythonLegacy, javaLegacy, csharpLegacy"
            )
        kwargs["uuid_representation"] = representation
    try:
        return CodecOptions(**kwargs)
    except TypeError as exc:
        raise ConfigurationError(f"invalid codec option: {exc}") from None
