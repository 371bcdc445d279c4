"""``debug_maybe``: the cheap first answer to "does this logger log DEBUG?" the per-operation
checks ask (pool, command events, server selection). It must never hide a message: logging
turned on while a client runs shows up on its very next operation."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.monitoring.debug_check import debug_maybe
from asyncmongo.testing import Standalone


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("asyncmongo.tests.debug_check")
    logger.setLevel(logging.NOTSET)
    yield logger
    logger.setLevel(logging.NOTSET)
    logger.disabled = False
    logging.disable(logging.NOTSET)


def test_false_only_once_the_logger_answered_false(logger: logging.Logger) -> None:
    maybe = debug_maybe(logger)
    logger.setLevel(logging.INFO)
    assert maybe() is True  # nothing cached yet: ask isEnabledFor
    assert logger.isEnabledFor(logging.DEBUG) is False
    assert maybe() is False  # the cached answer, False for certain


def test_a_level_change_is_seen_at_once(logger: logging.Logger) -> None:
    maybe = debug_maybe(logger)
    logger.setLevel(logging.INFO)
    logger.isEnabledFor(logging.DEBUG)
    assert maybe() is False
    logger.setLevel(logging.DEBUG)
    assert maybe() is True and logger.isEnabledFor(logging.DEBUG)
    # a parent's level counts too (the logger itself is NOTSET)
    logger.setLevel(logging.NOTSET)
    logging.getLogger("asyncmongo.tests").setLevel(logging.WARNING)
    try:
        assert maybe() is True and not logger.isEnabledFor(logging.DEBUG)
        assert maybe() is False
        logging.getLogger("asyncmongo.tests").setLevel(logging.DEBUG)
        assert maybe() is True and logger.isEnabledFor(logging.DEBUG)
    finally:
        logging.getLogger("asyncmongo.tests").setLevel(logging.NOTSET)


def test_logging_disable_and_logger_disabled(logger: logging.Logger) -> None:
    maybe = debug_maybe(logger)
    logger.setLevel(logging.DEBUG)
    assert logger.isEnabledFor(logging.DEBUG)
    logging.disable(logging.DEBUG)
    assert not (maybe() and logger.isEnabledFor(logging.DEBUG))
    logging.disable(logging.NOTSET)
    assert maybe() and logger.isEnabledFor(logging.DEBUG)
    logger.disabled = True  # not cached: True from maybe(), False from isEnabledFor
    assert not (maybe() and logger.isEnabledFor(logging.DEBUG))


def test_without_a_cache_it_always_says_ask() -> None:
    class Plain:
        pass

    maybe = debug_maybe(Plain())  # type: ignore[arg-type]
    assert maybe() is True


@pytest.mark.parametrize("name", ["asyncmongo.command", "asyncmongo.serverSelection"])
async def test_logging_turned_on_between_operations_logs_the_next_one(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.coll
            for _ in range(3):  # the usual path, logging off: answers are cached as False
                await coll.find_one({})
                await client.db.command("ping")
            assert not [r for r in caplog.records if r.name == name]
            with caplog.at_level(logging.DEBUG, logger=name):
                await coll.find_one({})
                await client.db.command("ping")
            logged = [r for r in caplog.records if r.name == name]
            assert logged, f"nothing logged on {name} once DEBUG was on"
            caplog.clear()
            await coll.find_one({})  # off again: nothing more
            assert not [r for r in caplog.records if r.name == name]
