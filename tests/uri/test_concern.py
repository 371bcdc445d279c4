"""ReadConcern / WriteConcern validation beyond the spec's document tests."""

from __future__ import annotations

import pytest

from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.errors import ConfigurationError


@pytest.mark.parametrize(
    "kwargs",
    [
        {"w": True},
        {"w": -1},
        {"w": ""},
        {"w": 1.5},
        {"wtimeout_ms": -1},
        {"wtimeout_ms": True},
        {"journal": 1},
        {"w": 0, "journal": True},
    ],
)
def test_invalid_write_concerns(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        WriteConcern(**kwargs)  # type: ignore[arg-type]


def test_write_concern_document_and_flags() -> None:
    assert WriteConcern().document == {} and WriteConcern().is_server_default
    wc = WriteConcern("majority", 100, True)
    assert wc.document == {"w": "majority", "wtimeout": 100, "j": True}
    assert wc.acknowledged and not wc.is_server_default
    assert not WriteConcern(0).acknowledged
    with pytest.raises(ConfigurationError, match="unknown"):
        WriteConcern.from_document({"fsync": True})


def test_read_concern() -> None:
    assert ReadConcern().document == {} and ReadConcern().is_server_default
    assert ReadConcern("snapshot").document == {"level": "snapshot"}
    with pytest.raises(ConfigurationError):
        ReadConcern(3)  # type: ignore[arg-type]
