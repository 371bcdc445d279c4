"""An in-memory MongoDB document store: command documents in, reply documents out.

The simulated deployment (``asyncmongo.testing``) puts its wire protocol in front of
:class:`Store`. Plain Python, no asyncio, no sockets.
"""

from asyncmongo.testing.store.commands import Store
from asyncmongo.testing.store.context import SessionContext
from asyncmongo.testing.store.errors import StoreError

__all__ = ["SessionContext", "Store", "StoreError"]
