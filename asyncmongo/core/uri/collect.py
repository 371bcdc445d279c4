"""Turn raw ``key=value`` pairs (URI, TXT record) or keyword arguments into typed options.

The connection-string rules applied here: case-insensitive keys; unknown keys warn and are
ignored; deprecated keys warn and map to their replacement unless it is present too; repeated
keys warn and the last one wins, except list options (``readPreferenceTags``, kept in order),
``tls``/``ssl`` (all instances must agree) and the proxy options (SOCKS5 spec: an error).
A bad value raises, or in lenient mode warns and is ignored (connection-string spec: "Any
invalid Values for a given key MUST be ignored and MUST log a WARN level message").
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from asyncmongo.core.uri.table import DEPRECATED, OPTIONS, Option, canonical_name, fold_key
from asyncmongo.core.uri.table import kwarg_key as fold_kwarg
from asyncmongo.core.uri.values import BadValue, utf8
from asyncmongo.errors import (
    ConfigurationError,
    ConfigurationWarning,
    DeprecatedOptionWarning,
    InvalidURI,
)

__all__ = ["KWARG_ONLY", "collect_kwargs", "collect_pairs"]

#: Keyword arguments that are not URI options (folded name -> attribute name).
KWARG_ONLY = {
    "serverapi": "server_api",
    "driverinfo": "driver_info",
    "driver": "driver_info",  # PyMongo's name
    "username": "username",
    "password": "password",
}

_NO_REPEAT = frozenset({"proxyHost", "proxyPort", "proxyUsername", "proxyPassword"})
#: SOCKS5 spec: "Drivers MUST ignore this option if it specifies a zero-length string".
_IGNORED_WHEN_EMPTY = frozenset({"proxyUsername", "proxyPassword"})
_STACK = 5


def collect_pairs(pairs: Iterable[tuple[str, str]], *, lenient: bool, where: str) -> dict[str, Any]:
    """Options from decoded ``(key, value)`` pairs, under their canonical names."""
    pairs = tuple(pairs)
    present = {canonical_name(key) for key, _ in pairs}
    options: dict[str, Any] = {}
    for key, raw in pairs:
        resolved = _resolve(key, raw, present, where)
        if resolved is None:
            continue
        option, raw = resolved
        if raw == "" and option.name in _IGNORED_WHEN_EMPTY:
            continue
        try:
            value = _validate(option, raw)
        except BadValue as exc:
            if option.name == "authSource" or not lenient:
                raise _bad_value(option, key, raw, exc, where) from None
            message = str(_bad_value(option, key, raw, exc, where))
            warnings.warn(message, ConfigurationWarning, _STACK)
            continue
        _store(options, option, value, key, where)
    return options


def _resolve(key: str, raw: str, present: set[str | None], where: str) -> tuple[Option, Any] | None:
    name = canonical_name(key)
    if name is not None:
        return OPTIONS[name], raw
    replacement = DEPRECATED.get(fold_key(key))
    if replacement is None:
        warnings.warn(
            f"Unsupported option {key!r} in the {where}: ignored", ConfigurationWarning, _STACK + 1
        )
        return None
    if replacement in present:
        warnings.warn(
            f"Deprecated key {key!r} present and ignored as found replacement {replacement!r}",
            DeprecatedOptionWarning,
            _STACK + 1,
        )
        return None
    warnings.warn(
        f"Deprecated key {key!r} has been replaced with {replacement!r}",
        DeprecatedOptionWarning,
        _STACK + 1,
    )
    if replacement == "authMechanismProperties":
        return OPTIONS[replacement], {"SERVICE_NAME": raw}
    return OPTIONS[replacement], raw


def _validate(option: Option, raw: Any) -> Any:
    if raw == "" and not option.is_list:
        raise BadValue("the value is empty")
    return option.validate(raw)


def _bad_value(option: Option, key: str, raw: Any, exc: BadValue, where: str) -> ConfigurationError:
    shown = "<hidden>" if option.secret else repr(raw)
    return ConfigurationError(f"invalid value {shown} for option {key!r} in the {where}: {exc}")


def _store(options: dict[str, Any], option: Option, value: Any, key: str, where: str) -> None:
    name = option.name
    if option.is_list:
        options.setdefault(name, []).append(value)
        return
    if name in options:
        if name == "tls":
            if options[name] != value:
                raise InvalidURI(f"conflicting values for 'tls'/'ssl' in the {where}")
            return
        if name in _NO_REPEAT:
            raise InvalidURI(f"option {key!r} may be given only once")
        warnings.warn(
            f"option {key!r} repeated in the {where}: the last value is used",
            ConfigurationWarning,
            _STACK,
        )
    options[name] = value


def collect_kwargs(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Options from keyword arguments (always strict), plus the keyword-only extras.

    A keyword whose value is None is treated as not given.
    """
    options: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, raw in kwargs.items():
        folded = fold_kwarg(key)
        _check_text(key, raw)
        if folded in KWARG_ONLY:
            if folded in ("username", "password") and not isinstance(raw, str | None):
                raise ConfigurationError(f"{key} must be a str")  # never echo the value
            if KWARG_ONLY[folded] in extras:
                raise ConfigurationError(f"{key!r} repeats another keyword (driver/driver_info)")
            extras[KWARG_ONLY[folded]] = raw
            continue
        if raw is None:
            continue
        name = canonical_name(folded)
        if name is None and folded in DEPRECATED:
            name = DEPRECATED[folded]
            warnings.warn(
                f"Deprecated option {key!r} has been replaced with {name!r}",
                DeprecatedOptionWarning,
                _STACK - 1,
            )
            if name == "authMechanismProperties":
                raw = {"SERVICE_NAME": raw}
        if name is None:
            raise ConfigurationError(f"unknown option {key!r}")
        option = OPTIONS[name]
        if raw == "" and name in _IGNORED_WHEN_EMPTY:
            continue
        try:
            value = _kwarg_value(option, raw)
        except BadValue as exc:
            raise _bad_value(option, key, raw, exc, "keyword arguments") from None
        if name == "tls" and options.get(name, value) != value:
            raise ConfigurationError("conflicting values for 'tls'/'ssl' in keyword arguments")
        options[name] = value
    return options, extras


def _check_text(key: str, raw: Any, depth: int = 0) -> None:
    """Every string in a keyword's value (nested in lists and mappings too) must be valid
    Unicode: the driver sends them as UTF-8, which cannot carry a lone surrogate."""
    if isinstance(raw, str):
        try:
            utf8(raw)
        except BadValue as exc:
            raise ConfigurationError(f"invalid value for option {key!r}: {exc}") from None
    elif depth < 8 and isinstance(raw, Mapping):
        for name, value in raw.items():
            _check_text(key, name, depth + 1)
            _check_text(key, value, depth + 1)
    elif depth < 8 and isinstance(raw, list | tuple):
        for item in raw:
            _check_text(key, item, depth + 1)


def _kwarg_value(option: Option, raw: Any) -> Any:
    if not option.is_list:
        return _validate(option, raw)
    items = [raw] if isinstance(raw, (str, Mapping)) else raw
    if not isinstance(items, Iterable):
        raise BadValue("expected a list")
    return [option.validate(item) for item in items]
