"""asyncmongo.core.sdam."""
