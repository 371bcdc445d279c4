"""asyncmongo.core.wire."""
