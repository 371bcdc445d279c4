"""asyncmongo.monitoring is the one public home of every event class the driver publishes."""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType

import asyncmongo.monitoring
from asyncmongo.core.cmap import events as cmap_events
from asyncmongo.core.sdam import events as sdam_events
from asyncmongo.core.sdam import topology_description
from asyncmongo.monitoring import command


def event_classes(module: ModuleType) -> set[str]:
    return {
        name for name, value in vars(module).items()
        if inspect.isclass(value) and name.endswith("Event") and not name.startswith("_")
        and dataclasses.is_dataclass(value)
    }


def test_every_event_class_is_exported_by_asyncmongo_monitoring() -> None:
    defined = set().union(*(
        event_classes(module)
        for module in (cmap_events, sdam_events, topology_description, command)
    ))
    assert len(defined) == 23  # 3 command, 11 CMAP, 3 heartbeat, 6 SDAM
    exported = set(asyncmongo.monitoring.__all__)
    assert defined <= exported, sorted(defined - exported)
    for name in defined:
        assert getattr(asyncmongo.monitoring, name).__doc__, f"{name} has no docstring"
