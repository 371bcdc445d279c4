"""asyncmongo.testing."""
