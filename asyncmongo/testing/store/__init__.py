"""An in-memory MongoDB document store: command documents in, reply documents out.

The simulated deployment (``asyncmongo.testing``) puts its wire protocol in front of
:class:`Store`. Plain Python, no asyncio, no sockets.
"""
