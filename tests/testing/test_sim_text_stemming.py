"""$text on the simulated standalone stems and drops stop words as mongod does (through PyMongo).

mongod indexes each document in its language (the ``language_override`` field, else the text
index's ``default_language``) and searches in ``$language`` (else the default): English terms
are stemmed with Snowball and stop words dropped, "none" keeps words as written. Languages the
simulator does not stem are refused by name, never searched unstemmed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import TEXT, AsyncMongoClient, IndexModel
from pymongo.errors import OperationFailure

from asyncmongo.testing.deployment import Standalone
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


@pytest.fixture
async def db() -> AsyncIterator[Any]:
    async with Standalone() as server:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            server.uri, serverSelectionTimeoutMS=5000)
        try:
            yield client.stemming
        finally:
            await client.close()


async def ids(db: Any, search: dict[str, Any]) -> list[int]:
    return sorted(d["_id"] for d in await db.c.find({"$text": search}).to_list())


async def seed(db: Any) -> None:
    await db.c.create_index([("s", TEXT)])
    await db.c.insert_many([
        {"_id": 1, "s": "He runs every day"},
        {"_id": 2, "s": "a morning run"},
        {"_id": 3, "s": "Running shoes"},
        {"_id": 4, "s": "the blueberries are ripe"},
        {"_id": 5, "s": "Running shoes", "language": "none"},
        {"_id": 6, "s": "the runner"},
    ])


async def test_stemming_matches_word_forms(db: Any) -> None:
    await seed(db)
    assert await ids(db, {"$search": "running"}) == [1, 2, 3]
    assert await ids(db, {"$search": "RUNS"}) == [1, 2, 3]
    assert await ids(db, {"$search": "blueberry"}) == [4]
    assert await ids(db, {"$search": "runner"}) == [6]
    assert await ids(db, {"$search": "shoe -blueberries"}) == [3]
    assert await ids(db, {"$search": "blueberry -RIPE"}) == []
    # a phrase also needs its (stemmed) terms among the document's terms
    assert await ids(db, {"$search": '"running shoes"'}) == [3]
    assert await ids(db, {"$search": '"running shoes"', "$language": "none"}) == [5]


async def test_stop_words_do_not_match(db: Any) -> None:
    await seed(db)
    assert await ids(db, {"$search": "the"}) == []
    assert await ids(db, {"$search": "the are"}) == []
    assert await ids(db, {"$search": "the ripe"}) == [4]


async def test_language_none_keeps_words_as_written(db: Any) -> None:
    await seed(db)
    # document 5 is indexed in "none": only the unstemmed query term "running" finds it
    assert await ids(db, {"$search": "running", "$language": "none"}) == [5]
    # and an unstemmed "run" still finds the English documents indexed under the stem "run"
    assert await ids(db, {"$search": "run", "$language": "none"}) == [1, 2, 3]
    assert await ids(db, {"$search": "runs", "$language": "none"}) == []
    assert await ids(db, {"$search": "the", "$language": "none"}) == []


async def test_text_score_counts_stems_and_skips_stop_words(db: Any) -> None:
    await db.c.create_index([("s", TEXT)])
    await db.c.insert_many([{"_id": 1, "s": "the run runs"}, {"_id": 2, "s": "run walk"}])
    found = await db.c.find({"$text": {"$search": "running"}},
                            {"score": {"$meta": "textScore"}}).to_list()
    # "run runs" is two tokens of one stem: (1 + 0.5) * (0.5 * 2 / 2 + 0.5)
    assert {d["_id"]: d["score"] for d in found} == {1: 1.5, 2: 0.75}


async def test_default_language_none_and_a_custom_override_field(db: Any) -> None:
    await db.c.create_index([("s", TEXT)], default_language="none", language_override="lang")
    await db.c.insert_many([{"_id": 1, "s": "the running"},
                            {"_id": 2, "s": "the running", "lang": "english"}])
    assert await ids(db, {"$search": "the"}) == [1]
    assert await ids(db, {"$search": "running"}) == [1]
    assert await ids(db, {"$search": "running", "$language": "en"}) == [2]


async def test_unsupported_languages_are_refused_by_name(db: Any) -> None:
    await seed(db)
    with pytest.raises(OperationFailure) as unknown:
        await db.c.find_one({"$text": {"$search": "run", "$language": "klingon"}})
    assert unknown.value.code == 2 and 'unsupported language: "klingon"' in str(unknown.value)
    with pytest.raises(OperationFailure) as unstemmed:
        await db.c.find_one({"$text": {"$search": "courir", "$language": "french"}})
    assert unstemmed.value.code == 2 and '"french"' in str(unstemmed.value)
    assert "asyncmongo.testing" in str(unstemmed.value)
    with pytest.raises(OperationFailure) as index:
        await db.other.create_index([("s", TEXT)], default_language="klingon")
    assert 'unsupported language: "klingon"' in str(index.value)
    await db.c.insert_one({"_id": 7, "s": "laufen", "language": "german"})
    with pytest.raises(OperationFailure) as document:
        await db.c.find_one({"$text": {"$search": "run"}})
    assert document.value.code == 17262 and '"german"' in str(document.value)


async def test_language_override_field_checked_on_writes(db: Any) -> None:
    await seed(db)
    with pytest.raises(OperationFailure) as unknown:
        await db.c.insert_one({"_id": 8, "s": "x", "language": "klingon"})
    assert unknown.value.code == 17262
    assert "language override unsupported: klingon" in str(unknown.value)
    with pytest.raises(OperationFailure) as not_string:
        await db.c.update_one({"_id": 1}, {"$set": {"language": 5}})
    assert not_string.value.code == 17261
    await db.c.update_one({"_id": 1}, {"$set": {"language": "none"}})
    assert await ids(db, {"$search": "runs", "$language": "none"}) == [1]


async def test_odm_style_text_search(db: Any) -> None:
    """The shape an ODM (Beanie's ``find(Text(...))`` with a textScore sort) sends."""
    await db.c.create_indexes([IndexModel([("title", TEXT), ("body", TEXT)],
                                          weights={"title": 10}, name="search")])
    await db.c.insert_many([
        {"_id": 1, "title": "Testing applications", "body": "how we test"},
        {"_id": 2, "title": "Cooking", "body": "tested recipes and tests"},
        {"_id": 3, "title": "Gardening", "body": "nothing here"},
    ])
    found = await db.c.find({"$text": {"$search": "tests"}},
                            {"score": {"$meta": "textScore"}}
                            ).sort([("score", {"$meta": "textScore"})]).to_list()
    assert [d["_id"] for d in found] == [1, 2]
    assert found[0]["score"] > found[1]["score"]
    info = (await db.c.index_information())["search"]
    assert info["weights"] == {"body": 1, "title": 10}
    assert info["default_language"] == "english"
