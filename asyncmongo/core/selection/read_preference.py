"""Read preferences (Server Selection "Read Preference"): mode, tag sets, maxStalenessSeconds
and the deprecated hedge document, validated when built.

A read preference that can never be honoured (tags, maxStalenessSeconds or hedge with mode
primary; a maxStalenessSeconds that is neither -1 nor positive) raises ConfigurationError.
The heartbeat-dependent minimum of maxStalenessSeconds is checked at selection time, because it
depends on the topology (``staleness.validate_max_staleness``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from asyncmongo.core.adopt import is_pymongo_object
from asyncmongo.errors import ConfigurationError


class Mode(Enum):
    """The five read preference modes; the values are the wire (camelCase) names."""

    PRIMARY = "primary"
    PRIMARY_PREFERRED = "primaryPreferred"
    SECONDARY = "secondary"
    SECONDARY_PREFERRED = "secondaryPreferred"
    NEAREST = "nearest"

    @classmethod
    def parse(cls, name: str) -> Mode:
        """A mode by name, case-insensitively ("secondaryPreferred", "SecondaryPreferred")."""
        wanted = name.lower() if isinstance(name, str) else None
        for mode in cls:
            if mode.value.lower() == wanted:
                return mode
        raise ConfigurationError(f"unknown read preference mode {name!r}")


TagSet = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ReadPreference:
    """Which servers a read may use. The default is mode primary with the tag set list [{}]."""

    mode: Mode = Mode.PRIMARY
    tag_sets: tuple[TagSet, ...] = ({},)
    max_staleness_seconds: int | None = None
    hedge: Mapping[str, Any] | None = None
    #: The operations' target for a read with this preference, built on first use
    #: (``asyncmongo.core.operations.base.Target.read``): the preference is immutable, so one
    #: target serves every read of every database and collection that inherits it.
    _read_target: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        staleness = self.max_staleness_seconds
        if isinstance(staleness, bool) or not isinstance(staleness, int | None):
            raise ConfigurationError(f"maxStalenessSeconds must be an integer, not {staleness!r}")
        if staleness == -1:
            object.__setattr__(self, "max_staleness_seconds", None)
        elif staleness is not None and staleness <= 0:
            raise ConfigurationError("maxStalenessSeconds must be a positive integer or -1")
        object.__setattr__(self, "tag_sets", _tag_sets(self.tag_sets))
        if self.mode is Mode.PRIMARY:
            for name, used in (
                ("tags", any(self.tag_sets)),
                ("maxStalenessSeconds", self.max_staleness_seconds is not None),
                ("hedge", self.hedge is not None),
            ):
                if used:
                    raise ConfigurationError(
                        f"read preference mode primary cannot be combined with {name}"
                    )

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ReadPreference:
        """From ``{mode, tag_sets | tagSets | tags, maxStalenessSeconds, hedge}``: the
        server-selection tests write ``tag_sets``, the unified test format ``tagSets`` and the
        wire ``$readPreference`` ``tags``; all three mean the same."""
        if "mode" not in document:
            raise ConfigurationError(f"a read preference needs a mode: {document!r}")
        tags = next(
            (document[key] for key in ("tag_sets", "tagSets", "tags") if key in document), None
        )
        return cls(
            Mode.parse(document["mode"]),
            tuple(tags) if tags is not None else ({},),
            document.get("maxStalenessSeconds"),
            document.get("hedge"),
        )

    @classmethod
    def from_options(
        cls,
        mode: str = "primary",
        tags: Iterable[TagSet] = (),
        max_staleness_seconds: int = -1,
    ) -> ReadPreference:
        """From connection-string options (readPreference, readPreferenceTags, ...)."""
        tag_sets = tuple(tags) or ({},)
        return cls(Mode.parse(mode), tag_sets, max_staleness_seconds)

    def document(self) -> dict[str, Any]:
        """The ``$readPreference`` document sent to mongos and load balancers."""
        document: dict[str, Any] = {"mode": self.mode.value}
        if any(self.tag_sets):
            document["tags"] = [dict(tag_set) for tag_set in self.tag_sets]
        if self.max_staleness_seconds is not None:
            document["maxStalenessSeconds"] = self.max_staleness_seconds
        if self.hedge is not None:
            document["hedge"] = dict(self.hedge)
        return document

    def __repr__(self) -> str:
        extra = ""
        if any(self.tag_sets):
            extra += f", tags {[dict(t) for t in self.tag_sets]}"
        if self.max_staleness_seconds is not None:
            extra += f", maxStalenessSeconds {self.max_staleness_seconds}"
        return f"<ReadPreference {self.mode.value}{extra}>"


def _tag_sets(tag_sets: Any) -> tuple[TagSet, ...]:
    if isinstance(tag_sets, Mapping) or not isinstance(tag_sets, Iterable):
        raise ConfigurationError(f"tag_sets must be a list of documents, not {tag_sets!r}")
    result = []
    for tag_set in tag_sets:
        if not isinstance(tag_set, Mapping):
            raise ConfigurationError(f"a tag set must be a document, not {tag_set!r}")
        result.append({str(key): str(value) for key, value in tag_set.items()})
    return tuple(result)


#: The default read preference: mode primary.
PRIMARY = ReadPreference()


def adopt_read_preference(value: Any) -> Any:
    """PyMongo's read preference (Primary(), Secondary(tag_sets=...), ...) as asyncmongo's."""
    if value is None or type(value) is ReadPreference:
        return value
    if is_pymongo_object(value, "pymongo.read_preferences"):
        return ReadPreference.from_document(value.document)
    return value
