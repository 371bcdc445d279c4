"""``python -m asyncmongo.demo`` runs and shows lossless BSON round trips."""

from __future__ import annotations

import pytest

from asyncmongo import demo


def test_demo_prints_lossless_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    demo.main()
    out = capsys.readouterr().out
    assert out.count("lossless  : True") == len(demo.sample_documents())
    assert '"$numberDecimal": "1234.50"' in out
    assert '"$oid": "65f1c0ffee0ddba11ca7f00d"' in out
