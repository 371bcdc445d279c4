"""The differential run: each seed's case against the simulator and against jongodb, through
asyncmongo's client, tallied into a ``Report``."""

from __future__ import annotations

import collections
import dataclasses
import itertools
from typing import Any

from tests.differential_server.deviations import (
    field_order_compared,
    for_jongodb,
    sorted_fields,
    unsupported,
)
from tests.differential_server.grammar import Case, Grammar
from tests.differential_server.runner import Answer, answer, reduce, show

__all__ = ["Report", "differential"]

_collections = itertools.count()


@dataclasses.dataclass(slots=True)
class Report:
    """What a run found: cases compared, agreeing, repaired by a deviation, incomparable on
    jongodb (by feature), and each disagreement in full."""

    cases: int = 0
    compared: int = 0
    both_refused: int = 0
    repaired: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    unsupported: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter)
    kinds: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    disagreements: list[str] = dataclasses.field(default_factory=list)

    def __repr__(self) -> str:
        return (f"Report({self.cases} cases: {self.compared} compared, {self.both_refused} "
                f"refused by both, repaired {dict(self.repaired)}, unsupported on jongodb "
                f"{dict(self.unsupported)}, kinds {dict(self.kinds)}, "
                f"{len(self.disagreements)} disagreements)")


async def _one(case: Case, simulator: Any, jongodb: Any, report: Report) -> None:
    name = f"case{next(_collections)}_{case.seed}"
    sim = await answer(case, simulator[name])
    report.cases += 1
    report.kinds[case.kind] += 1
    feature = unsupported(case)
    if feature is not None:
        report.unsupported[feature] += 1
        return
    jongodb_case, fixup, applied = for_jongodb(case)
    jon = await answer(jongodb_case, jongodb[name])
    if jon.error is None:
        jon = Answer(value=fixup(jon.value))
    report.repaired.update(applied)
    if sim.error is not None and jon.error is not None:
        report.both_refused += 1
        return
    report.compared += 1
    if not field_order_compared(case) and sim.error is None and jon.error is None:
        sim, jon = Answer(value=sorted_fields(sim.value)), Answer(value=sorted_fields(jon.value))
    if sim.error is not None or jon.error is not None or \
            reduce(case, sim.value) != reduce(case, jon.value):
        report.disagreements.append(show(case, sim, jon))


async def differential(seeds: range, simulator: Any, jongodb: Any) -> Report:
    """Run the case of every seed on both databases."""
    report = Report()
    for seed in seeds:
        case = Grammar(seed).case()
        try:
            await _one(case, simulator, jongodb, report)
        except Exception as exc:
            exc.add_note(f"while running seed {seed}: {case.kind} {case.spec!r} on "
                         f"{case.documents!r}")
            raise
    return report
