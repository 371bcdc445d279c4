"""The generics, as type checkers see them: mypy --strict and pyright over a typed program.

``sample_program.py`` is written as a PyMongo user would write it (TypedDict documents,
``AsyncMongoClient[Movie]``, ``AsyncCollection[Movie]``, ``document_class=``); each
``reveal_type(...)  # revealed: T`` line states the type both checkers must infer there, and
the file must check with no error (pyright in strict mode). ``bad_usage.py`` holds misuses,
each line marked ``# expect: <mypy code> <pyright rule>``: exactly those lines must fail,
with those errors. Each checker runs once for the module, over both files.

The same sample also runs, on a simulated standalone, so the subscripted classes and the
inferred document classes are checked at run time too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from asyncmongo import AsyncChangeStream, AsyncCollection, AsyncMongoClient, InsertOne
from asyncmongo.testing import Standalone
from tests.typing import sample_program

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SAMPLE = HERE / "sample_program.py"
BAD = HERE / "bad_usage.py"
TIMEOUT_S = 240

REVEALED = re.compile(r"reveal_type\(.*#\s*revealed:\s*(?P<type>.+?)\s*$")
EXPECT = re.compile(r"#\s*expect:\s*(?P<mypy>[\w-]+)\s+(?P<pyright>\w+)\s*$")
MYPY_LINE = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*?)"
    r"(?:  \[(?P<code>[\w-]+)\])?$"
)
MYPY_TYPEDDICT = re.compile(r"TypedDict\('?(?:\w+\.)*(\w+)'?, \{[^{}]*\}\)")
QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


@dataclass(frozen=True, slots=True)
class Report:
    """One checker's findings: revealed types and errors, by file name and line."""

    revealed: dict[tuple[str, int], str]
    errors: set[tuple[str, int, str]]
    output: str


def _marked(path: Path, pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = pattern.search(line)
        if match:
            yield number, match


def normalise(type_text: str) -> str:
    """A revealed type as the ``# revealed:`` comments spell it: no module paths, TypedDicts
    by name (mypy writes ``TypedDict(pkg.mod.Movie, {...})`` and ``typing.MutableMapping``)."""
    return QUALIFIED.sub(r"\1", MYPY_TYPEDDICT.sub(r"\1", type_text))


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _pyright_command() -> list[str] | str:
    """The pyright command line, or why it cannot run."""
    pyright = shutil.which("pyright")
    if pyright is None:
        return "pyright is not installed (pip install -e '.[test]' installs it)"
    try:
        started = _run([pyright, "--version"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the pyright binary cannot start: {exc!r}"
    if started.returncode != 0:
        return f"the pyright binary cannot start: {started.stderr.strip()[-300:]}"
    return [pyright, "--outputjson", "--pythonpath", sys.executable]


@dataclass(frozen=True, slots=True)
class Outputs:
    """Each checker's (stdout, stderr) over both files; for pyright, why it could not run."""

    mypy: tuple[str, str]
    pyright: tuple[str, str] | str


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    """Run both checkers, side by side."""
    cache = tmp_path_factory.mktemp("mypy_cache")
    mypy = _start([
        sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--show-error-codes",
        "--hide-error-context", "--no-pretty", "--cache-dir", str(cache), str(SAMPLE), str(BAD),
    ])
    command = _pyright_command()
    pyright = _start([*command, str(SAMPLE), str(BAD)]) if isinstance(command, list) else None
    try:
        mypy_output = mypy.communicate(timeout=TIMEOUT_S)
        pyright_output = pyright.communicate(timeout=TIMEOUT_S) if pyright else str(command)
    finally:
        for process in (mypy, pyright):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    return Outputs(mypy_output, pyright_output)


@pytest.fixture(scope="module")
def mypy_report(outputs: Outputs) -> Report:
    stdout, stderr = outputs.mypy
    revealed: dict[tuple[str, int], str] = {}
    errors: set[tuple[str, int, str]] = set()
    for line in stdout.splitlines():
        match = MYPY_LINE.match(line)
        if match is None:
            continue
        where = (Path(match["file"]).name, int(match["line"]))
        message = match["message"]
        if match["severity"] == "note" and message.startswith("Revealed type is "):
            revealed[where] = normalise(message.removeprefix("Revealed type is ")[1:-1])
        elif match["severity"] == "error":
            errors.add((*where, match["code"] or "?"))
    assert revealed or errors, stdout + stderr
    return Report(revealed, errors, stdout + stderr)


@pytest.fixture(scope="module")
def pyright_report(outputs: Outputs) -> Report:
    output = outputs.pyright
    if isinstance(output, str):
        pytest.skip(output)
    stdout, stderr = output
    try:
        diagnostics = json.loads(stdout)["generalDiagnostics"]
    except (ValueError, KeyError):
        pytest.fail(f"pyright gave no report:\n{stdout}\n{stderr}")
    revealed: dict[tuple[str, int], str] = {}
    errors: set[tuple[str, int, str]] = set()
    for diagnostic in diagnostics:
        where = (Path(diagnostic["file"]).name, diagnostic["range"]["start"]["line"] + 1)
        message = diagnostic["message"]
        if diagnostic["severity"] == "information" and message.startswith("Type of "):
            revealed[where] = normalise(message.rsplit(' is "', 1)[1][:-1])
        elif diagnostic["severity"] == "error":
            errors.add((*where, diagnostic.get("rule", "?")))
    return Report(revealed, errors, stdout)


def expected_reveals() -> dict[tuple[str, int], str]:
    return {(SAMPLE.name, line): match["type"] for line, match in _marked(SAMPLE, REVEALED)}


def expected_errors(checker: str) -> set[tuple[str, int, str]]:
    return {(BAD.name, line, match[checker]) for line, match in _marked(BAD, EXPECT)}


def test_the_sample_states_enough() -> None:
    """The sample covers every generic class, and the bad file a dozen misuses."""
    stated = " ".join(expected_reveals().values())
    for name in ("AsyncMongoClient[", "AsyncDatabase[", "AsyncCollection[", "AsyncCursor[",
                 "AsyncCommandCursor[", "AsyncChangeStream[", "CodecOptions[", "Movie | None"):
        assert name in stated
    assert len(expected_errors("mypy")) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_inferred_types(checker: str, request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(f"{checker}_report")
    sample_revealed = {k: v for k, v in report.revealed.items() if k[0] == SAMPLE.name}
    assert sample_revealed == expected_reveals(), report.output


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_the_sample_checks_clean(checker: str, request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(f"{checker}_report")
    assert {e for e in report.errors if e[0] != BAD.name} == set(), report.output


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_misuses_fail_with_their_errors(checker: str, request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(f"{checker}_report")
    assert {e for e in report.errors if e[0] == BAD.name} == expected_errors(checker), (
        report.output
    )


def test_normalise() -> None:
    assert normalise(
        "asyncmongo.cursor.AsyncCursor[TypedDict(tests.typing.sample_program.Movie, "
        "{'name': str, 'year': int})] | None"
    ) == "AsyncCursor[Movie] | None"
    assert normalise("typing.MutableMapping[str, Any]") == "MutableMapping[str, Any]"
    assert normalise("TypedDict('m.Movie', {'name': builtins.str})") == "Movie"


# -- at run time ----------------------------------------------------------------------------


def test_subscripted_classes_at_run_time() -> None:
    """PyMongo's runtime spellings work: ``InsertOne[Mapping[str, Any]](...)``, and every
    generic class subscripted (type aliases and ``cast`` evaluate them at run time)."""
    from collections.abc import Mapping
    from typing import Any

    from asyncmongo import AsyncCommandCursor, AsyncCursor, AsyncDatabase, ReplaceOne
    from asyncmongo.bson import CodecOptions

    model = InsertOne[Mapping[str, Any]]({"a": 1})
    assert model == InsertOne({"a": 1}) and model.document == {"a": 1}
    assert ReplaceOne[dict[str, Any]]({"a": 1}, {"b": 2}) == ReplaceOne({"a": 1}, {"b": 2})
    for cls in (AsyncMongoClient, AsyncDatabase, AsyncCollection, AsyncCursor,
                AsyncCommandCursor, AsyncChangeStream, CodecOptions):
        alias = cls[sample_program.Movie]
        assert alias.__origin__ is cls
    options = CodecOptions[sample_program.Movie](document_class=sample_program.Movie)
    assert options.document_class is sample_program.Movie


def test_write_models_are_generic_where_pymongos_are() -> None:
    """InsertOne and ReplaceOne take a type argument, the others none, as in PyMongo."""
    import pymongo

    import asyncmongo

    for name in ("InsertOne", "ReplaceOne", "UpdateOne", "UpdateMany", "DeleteOne", "DeleteMany"):
        theirs, ours = getattr(pymongo, name), getattr(asyncmongo, name)
        assert hasattr(ours, "__class_getitem__") == hasattr(theirs, "__class_getitem__"), name


async def test_the_sample_runs() -> None:
    async with Standalone() as deployment:
        await sample_program.untyped_client(deployment.uri)
        await sample_program.typed_client(deployment.uri)
        sample_program.document_class_inference(deployment.uri)
        # what the typed writes left: the last find_one_and_replace's document
        client = AsyncMongoClient[sample_program.Movie](deployment.uri)
        try:
            movies = await client.test.movies.find({}, {"_id": 0}).to_list()
        finally:
            await client.close()
        assert movies == [{"name": "x", "year": 1}]
