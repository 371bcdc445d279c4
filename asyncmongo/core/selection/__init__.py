"""Server selection, pure: read preferences, suitability, the latency window and the power of
two random choices. ``select_server`` is one attempt; the runtime loops and waits."""

from asyncmongo.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from asyncmongo.core.selection.server_selector import (
    Selection,
    read_preference_to_send,
    select_server,
    suitable_and_in_window,
    write_stage_read_preference,
)
from asyncmongo.core.selection.suitability import Operation

__all__ = [
    "PRIMARY",
    "Mode",
    "Operation",
    "ReadPreference",
    "Selection",
    "read_preference_to_send",
    "select_server",
    "suitable_and_in_window",
    "write_stage_read_preference",
]
