"""Why the runner stops a test other than a failed assertion.

:class:`Unsupported` is a skip with a written reason: a feature the simulator lacks, a piece
of the asyncmongo API that is not built yet (the reason names it), an optional spec feature
the runner leaves out. :class:`UnknownOperation` and :class:`TestFormatError` are failures:
the file asks for something the unified test format does not define.
"""

from __future__ import annotations

from spec_tests.unified.matcher import TestFormatError

__all__ = ["ApiMissing", "TestFormatError", "UnknownOperation", "Unsupported"]


class Unsupported(Exception):
    """Skip this test: ``str(self)`` is the reason."""


class ApiMissing(Unsupported):
    """The asyncmongo API has no such method yet (e.g. ``AsyncCollection.insert_one``)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"asyncmongo API not built yet: {what}")
        self.what = what


class UnknownOperation(TestFormatError):
    """An operation name the unified test format does not define for this object."""
