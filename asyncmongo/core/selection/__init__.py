"""asyncmongo.core.selection."""
