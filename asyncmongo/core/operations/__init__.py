"""asyncmongo.core.operations."""
