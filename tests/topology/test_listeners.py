"""Listeners: every listener gets every event in order; one that raises is logged, not
propagated (an observer must never break the driver)."""

from __future__ import annotations

import logging

import pytest

from asyncmongo.errors import ConfigurationError
from asyncmongo.monitoring import Listeners


def test_publish_reaches_every_listener_in_order() -> None:
    seen: list[tuple[str, object]] = []
    listeners = Listeners([lambda e: seen.append(("a", e)), lambda e: seen.append(("b", e))])
    listeners.publish(1)
    listeners.publish(2)
    assert seen == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert bool(listeners) and not Listeners()


def test_a_failing_listener_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[object] = []

    def broken(event: object) -> None:
        raise RuntimeError("listener bug")

    listeners = Listeners([broken, seen.append])
    with caplog.at_level(logging.ERROR, logger="asyncmongo.monitoring"):
        listeners.publish("event")
    assert seen == ["event"]
    assert "listener bug" in caplog.text


def test_a_listener_must_be_callable() -> None:
    with pytest.raises(ConfigurationError):
        Listeners([42])  # type: ignore[list-item]
