"""Rules for test modules in which PyMongo (the test-only peer) is the client.

Our own code is held to "no ResourceWarning" everywhere. PyMongo, though, can leave a socket
unclosed when a client is closed while a monitor is still connecting (seen under load on
2 cores); that is PyMongo's leak, not the simulator's nor the driver's. Modules that run PyMongo
set ``pytestmark = PYMONGO_PEER_MARKS`` and use the ``collect_pymongo_leaks`` fixture, so such
a socket is collected, and its warning dropped, inside the module that made it rather than
failing whichever unrelated test the garbage collector happens to run in next.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

PYMONGO_PEER_MARKS = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def collect_pymongo_leaks() -> Iterator[None]:
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
