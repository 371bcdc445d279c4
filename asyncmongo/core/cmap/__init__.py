"""CMAP, pure: pool options, the pool's bookkeeping and decisions, events and log messages.

``options`` (ConnectionPoolOptions), ``book`` (PoolBook: idle stack, FIFO waiters,
maxConnecting slots, generations), ``events`` (every CMAP event), ``log_messages`` (the
connection log messages of specs/logging). The asyncio pool is ``asyncmongo.runtime.pool``.
"""

from asyncmongo.core.cmap.book import PoolBook, PoolState, PoolStatistics
from asyncmongo.core.cmap.options import PoolOptions

__all__ = ["PoolBook", "PoolOptions", "PoolState", "PoolStatistics"]
