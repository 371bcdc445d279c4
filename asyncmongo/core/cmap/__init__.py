"""asyncmongo.core.cmap."""
