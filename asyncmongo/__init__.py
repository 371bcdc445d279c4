"""asyncmongo: an asyncio-native MongoDB driver for Python 3.11+."""

from __future__ import annotations

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
