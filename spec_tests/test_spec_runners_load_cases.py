"""The spec runners really run something.

A runner whose glob finds nothing collects zero cases, and pytest reports a zero-case
parametrisation as one quiet skip ("got empty parameter set"): the suite looks green while
nothing ran. These checks turn that into a failure:

- every parametrised test of every ``spec_tests/test_*.py`` runner has at least one case;
- every vendored suite under ``spec_tests/data`` that holds JSON tests is named (as a quoted
  string) by some runner or spec_tests/support module, or is listed in :data:`NOT_RUN` with
  the written reason it has no runner (each such suite shows up in ``pytest -rs`` as a skip
  carrying that reason, never silently).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RUNNERS = sorted(p for p in HERE.glob("test_*.py") if p.name != Path(__file__).name)
SUITES = sorted(d.name for d in DATA.iterdir() if d.is_dir() and any(d.rglob("*.json")))

#: Vendored suites with JSON tests and no runner, each with why.
NOT_RUN: dict[str, str] = {
    "client-side-operations-timeout": "no runner: timeoutMS exists only as the client's "
    "deadline per operation (client_api); timeoutMS on a database, collection, session or "
    "single operation, timeoutMode and the CSOT retry rules are not built",
}

#: Folders inside a suite that has a runner, which that runner does not collect, each with why.
PARTS_NOT_RUN: dict[str, str] = {}


def _module(path: Path) -> ModuleType:
    return importlib.import_module(f"spec_tests.{path.stem}")


def _parametrized_tests(module: ModuleType) -> list[tuple[str, Any]]:
    found = []
    for name, value in vars(module).items():
        if not name.startswith("test_") or not callable(value):
            continue
        for mark in getattr(value, "pytestmark", []):
            if mark.name == "parametrize":
                found.append((name, mark))
    return found


def test_there_are_runners_and_suites() -> None:
    assert len(RUNNERS) >= 20
    assert len(SUITES) >= 25


@pytest.mark.parametrize("path", RUNNERS, ids=lambda p: p.stem)
def test_every_parametrised_runner_test_has_cases(path: Path) -> None:
    module = _module(path)
    for name, mark in _parametrized_tests(module):
        argvalues = mark.kwargs.get("argvalues", mark.args[1] if len(mark.args) > 1 else None)
        assert argvalues is not None, f"{path.stem}.{name}: cannot read its parameters"
        assert len(list(argvalues)) > 0, f"{path.stem}.{name} collected zero cases"


def test_the_case_counter_sees_parametrisations() -> None:
    module = _module(HERE / "test_connection_string.py")
    assert [name for name, _ in _parametrized_tests(module)] == ["test_connection_string"]


def _runner_sources() -> str:
    return "\n".join(p.read_text() for p in RUNNERS) + "\n".join(
        p.read_text() for p in (HERE / "support").glob("*.py")
    )


@pytest.mark.parametrize("suite", SUITES)
def test_every_vendored_suite_has_a_runner(suite: str) -> None:
    if f'"{suite}' in _runner_sources():
        return  # a runner names it (a NOT_RUN entry left behind is harmless, but drop it)
    if suite in NOT_RUN:
        pytest.skip(NOT_RUN[suite])
    raise AssertionError(f"spec_tests/data/{suite} holds JSON tests but no runner names it")


@pytest.mark.parametrize(
    "part",
    sorted(PARTS_NOT_RUN)
    or [pytest.param(None, marks=pytest.mark.skip(reason="every suite part has a runner"))],
)
def test_suite_parts_without_a_runner_are_listed(part: str) -> None:
    assert any((DATA / part).rglob("*.json")), f"spec_tests/data/{part} holds no JSON tests"
    if f'"{part}' in _runner_sources():
        return  # a runner names it now (drop the PARTS_NOT_RUN entry)
    pytest.skip(PARTS_NOT_RUN[part])
