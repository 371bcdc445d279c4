"""``python -m asyncmongo.demo``: the embedded deployment tour by default, BSON with --bson."""

from __future__ import annotations

import subprocess
import sys

import pytest

from asyncmongo import demo


def test_bson_tour_prints_lossless_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    demo.main(["--bson"])
    out = capsys.readouterr().out
    assert out.count("lossless  : True") == len(demo.sample_documents())
    assert '"$numberDecimal": "1234.50"' in out
    assert '"$oid": "65f1c0ffee0ddba11ca7f00d"' in out
    assert "simulated replica set" not in out


@pytest.mark.timeout(120)
def test_default_demo_runs_a_failover_on_an_embedded_replica_set() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "asyncmongo.demo"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "started a simulated replica set: mongodb://127.0.0.1:" in out
    assert "discovered from one seed: 127.0.0.1:" in out
    assert "totals by item: [('cake', 3), ('tea', 7)]" in out
    assert "after a transaction: 4 orders" in out
    assert "with no error surfaced to the application" in out
    assert "orders now: 5" in out
    assert "lossless  : True" in out
    assert "Traceback" not in done.stderr
