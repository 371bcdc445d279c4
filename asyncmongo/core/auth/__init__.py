"""asyncmongo.core.auth."""
