"""specs/logging: MONGODB_LOG_* configure asyncmongo's component loggers, never raise."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.monitoring import log_config
from asyncmongo.monitoring.log_config import (
    COMPONENT_LOGGERS,
    OFF,
    configure_from_environment,
    settings_from_environment,
    truncate,
)
from asyncmongo.testing import Standalone

COMMAND = "asyncmongo.command"
TOPOLOGY = "asyncmongo.topology"
SELECTION = "asyncmongo.serverSelection"
CONNECTION = "asyncmongo.connection"


@pytest.fixture
def restore_loggers() -> Iterator[None]:
    """The tests configure the process's real loggers: put them back as they were."""
    names = [*COMPONENT_LOGGERS.values(), "asyncmongo"]
    saved = {
        name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers),
               logging.getLogger(name).propagate)
        for name in names
    }
    length, handlers = log_config._max_document_length, dict(log_config._handlers)
    yield
    for name, (level, old_handlers, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = old_handlers
        logger.propagate = propagate
    for path, handler in log_config._handlers.items():
        if path not in handlers:
            handler.close()
    log_config._handlers.clear()
    log_config._handlers.update(handlers)
    log_config._max_document_length = length


def test_all_sets_every_component_and_a_component_variable_wins() -> None:
    settings = settings_from_environment({"MONGODB_LOG_ALL": "debug", "MONGODB_LOG_COMMAND": "Off"})
    assert settings.levels == {
        COMMAND: OFF, TOPOLOGY: logging.DEBUG, SELECTION: logging.DEBUG, CONNECTION: logging.DEBUG
    }
    assert settings.path == "stderr" and settings.problems == ()


@pytest.mark.parametrize(
    ("value", "level"),
    [("emergency", logging.CRITICAL), ("alert", logging.CRITICAL), ("critical", logging.CRITICAL),
     ("error", logging.ERROR), ("WARN", logging.WARNING), ("notice", logging.INFO),
     ("info", logging.INFO), ("debug", logging.DEBUG), ("trace", logging.DEBUG), ("off", OFF)],
)
def test_every_severity_maps_to_the_closest_python_level(value: str, level: int) -> None:
    settings = settings_from_environment({"MONGODB_LOG_TOPOLOGY": value})
    assert settings.levels == {TOPOLOGY: level}


def test_nothing_set_configures_nothing() -> None:
    settings = settings_from_environment({})
    assert settings.levels == {} and settings.max_document_length == 1000


def test_invalid_values_count_as_unset_and_are_reported() -> None:
    settings = settings_from_environment({
        "MONGODB_LOG_ALL": "info",
        "MONGODB_LOG_CONNECTION": "loud",
        "MONGODB_LOG_MAX_DOCUMENT_LENGTH": "ten",
    })
    assert settings.levels[CONNECTION] == logging.INFO  # MONGODB_LOG_ALL's, as if unset
    assert settings.max_document_length == 1000
    assert len(settings.problems) == 2
    assert "MONGODB_LOG_CONNECTION='loud'" in settings.problems[0]


def test_path_names_stdout_stderr_case_insensitively_else_a_file() -> None:
    assert settings_from_environment({"MONGODB_LOG_PATH": "STDOUT"}).path == "stdout"
    assert settings_from_environment({"MONGODB_LOG_PATH": "/tmp/x.log"}).path == "/tmp/x.log"


def test_truncate_cuts_at_the_configured_length(restore_loggers: None) -> None:
    configure_from_environment({"MONGODB_LOG_MAX_DOCUMENT_LENGTH": "5"})
    assert truncate("0123456789") == "01234..."
    assert truncate("01234") == "01234"


async def test_a_file_destination_is_appended_to(
    tmp_path: Path, restore_loggers: None
) -> None:
    log = tmp_path / "driver.log"
    log.write_text("kept\n")
    configure_from_environment({
        "MONGODB_LOG_COMMAND": "debug",
        "MONGODB_LOG_PATH": str(log),
        "MONGODB_LOG_MAX_DOCUMENT_LENGTH": "20",
    })
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        await client.db.command("ping")
    text = log.read_text()
    assert text.startswith("kept\n")
    assert 'DEBUG asyncmongo.command Command "ping" started' in text
    assert 'Command "ping" succeeded' in text
    started = next(line for line in text.splitlines() if '"ping" started' in line)
    command = started.split("Command: ", 1)[1]
    assert len(command) == 20 + len("...") and command.endswith("...")


def test_a_bad_path_falls_back_to_stderr(
    tmp_path: Path, restore_loggers: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "missing-dir" / "x.log")
    with caplog.at_level(logging.WARNING, logger="asyncmongo"):
        configure_from_environment({"MONGODB_LOG_TOPOLOGY": "info", "MONGODB_LOG_PATH": path})
    (handler,) = logging.getLogger(TOPOLOGY).handlers
    assert isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr
    assert "cannot be opened" in caplog.text


def test_programmatic_configuration_wins_unless_overridden(restore_loggers: None) -> None:
    logger = logging.getLogger(SELECTION)
    logger.setLevel(logging.ERROR)
    configure_from_environment({"MONGODB_LOG_SERVER_SELECTION": "debug"})
    assert logger.level == logging.ERROR and not logger.handlers
    configure_from_environment({"MONGODB_LOG_SERVER_SELECTION": "debug"}, override=True)
    assert logger.level == logging.DEBUG and logger.handlers and not logger.propagate


def test_off_silences_a_component(restore_loggers: None) -> None:
    configure_from_environment({"MONGODB_LOG_ALL": "debug", "MONGODB_LOG_CONNECTION": "off"})
    assert not logging.getLogger(CONNECTION).isEnabledFor(logging.CRITICAL)
    assert logging.getLogger(TOPOLOGY).isEnabledFor(logging.DEBUG)


def test_the_first_client_applies_the_environment_to_stdout(tmp_path: Path) -> None:
    """A fresh process: MONGODB_LOG_ALL=debug, MONGODB_LOG_PATH=stdout, every component logs."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        import asyncio
        from asyncmongo import AsyncMongoClient
        from asyncmongo.testing import Standalone

        async def main():
            async with Standalone() as server:
                async with AsyncMongoClient(server.uri) as client:
                    await client.db.command("ping")

        asyncio.run(main())
    """))
    env = {**os.environ, "MONGODB_LOG_ALL": "debug", "MONGODB_LOG_PATH": "stdout",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for name, message in [(COMMAND, 'Command "ping" succeeded'),
                          (TOPOLOGY, "Starting monitoring for topology"),
                          (SELECTION, "Server selection succeeded"),
                          (CONNECTION, "Connection checked out")]:
        assert f"DEBUG {name} {message}" in done.stdout, (name, done.stdout[-2000:])
    assert "asyncmongo." not in done.stderr
