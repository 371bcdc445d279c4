"""``python -m asyncmongo``: a command line for looking at a deployment through the driver.

Commands (each has ``--help``):

- ``ping URI``: one ``ping`` round trip, and the server that answered;
- ``hello URI``: the server's ``hello`` reply as relaxed Extended JSON;
- ``topology URI [--watch]``: the servers, their types, RTTs and pool sizes as the driver
  sees them; ``--watch`` keeps printing the SDAM and CMAP events as they happen (``--duration``
  or ``--count`` end it, so does Ctrl-C);
- ``bench URI``: a quick latency and throughput probe (``ping`` or ``find_one`` from
  ``--concurrency`` tasks for ``--duration`` seconds).

A driver error prints its message and exits with status 1, never a traceback. :func:`run` is the
same program as a coroutine, for use from a running event loop (the tests call it).
"""

from asyncmongo.cli.main import main, run

__all__ = ["main", "run"]
