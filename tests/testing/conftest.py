"""Load the simulator's pytest plugin for these tests unless its entry point already did
(registering the same module twice, under two names, is an error in pluggy)."""

from __future__ import annotations

import pytest

import asyncmongo.testing.pytest_plugin as plugin


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(plugin):
        config.pluginmanager.register(plugin, "asyncmongo-testing-fixtures")
