"""asyncmongo.core.uri."""
