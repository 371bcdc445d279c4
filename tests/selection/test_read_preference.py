"""ReadPreference: parsing, validation (clear ConfigurationErrors) and the $readPreference doc."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from asyncmongo.errors import ConfigurationError


def test_default_is_primary_with_the_empty_tag_set() -> None:
    assert PRIMARY.mode is Mode.PRIMARY
    assert PRIMARY.tag_sets == ({},)
    assert PRIMARY.max_staleness_seconds is None
    assert PRIMARY.document() == {"mode": "primary"}


def test_modes_parse_case_insensitively() -> None:
    assert Mode.parse("SecondaryPreferred") is Mode.SECONDARY_PREFERRED
    assert Mode.parse("nearest") is Mode.NEAREST
    with pytest.raises(ConfigurationError, match="unknown read preference mode"):
        Mode.parse("closest")


@pytest.mark.parametrize("key", ["tag_sets", "tagSets", "tags"])
def test_from_document_reads_every_spelling_of_the_tag_sets(key: str) -> None:
    # unified test format: collectionOptions.readPreference uses tagSets (server-selection
    # logging/replica-set.json "unsatisfiable read preference" must not select a secondary)
    preference = ReadPreference.from_document({"mode": "Secondary", key: [{"dc": "ny"}]})
    assert preference.tag_sets == ({"dc": "ny"},)


def test_from_document_and_back() -> None:
    document = {
        "mode": "Secondary",
        "tag_sets": [{"dc": "ny"}, {}],
        "maxStalenessSeconds": 120,
    }
    preference = ReadPreference.from_document(document)
    assert preference.document() == {
        "mode": "secondary",
        "tags": [{"dc": "ny"}, {}],
        "maxStalenessSeconds": 120,
    }


def test_minus_one_means_no_max_staleness() -> None:
    assert ReadPreference(Mode.SECONDARY, max_staleness_seconds=-1).max_staleness_seconds is None
    assert ReadPreference(Mode.PRIMARY, max_staleness_seconds=-1) == PRIMARY


def test_from_connection_string_options() -> None:
    preference = ReadPreference.from_options("nearest", [{"dc": "ny"}], 90)
    assert preference == ReadPreference(Mode.NEAREST, ({"dc": "ny"},), 90)
    assert ReadPreference.from_options() == PRIMARY


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tag_sets": ({"dc": "ny"},)}, "primary cannot be combined with tags"),
        ({"max_staleness_seconds": 120}, "primary cannot be combined with maxStalenessSeconds"),
        ({"hedge": {"enabled": True}}, "primary cannot be combined with hedge"),
    ],
)
def test_primary_rejects_tags_staleness_and_hedge(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ReadPreference(Mode.PRIMARY, **kwargs)


@pytest.mark.parametrize("value", [0, -2, 1.5, "90", True])
def test_invalid_max_staleness(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        ReadPreference(Mode.SECONDARY, max_staleness_seconds=value)


@pytest.mark.parametrize("tag_sets", [{"dc": "ny"}, ["dc"], 5])
def test_invalid_tag_sets(tag_sets: Any) -> None:
    with pytest.raises(ConfigurationError):
        ReadPreference(Mode.SECONDARY, tag_sets=tag_sets)


def test_document_without_mode_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="needs a mode"):
        ReadPreference.from_document({"tag_sets": [{}]})
