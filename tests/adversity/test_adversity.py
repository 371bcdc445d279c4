"""The adversity suite: 100+ concurrent tasks doing retryable writes and reads while faults
hit random connections, across deployments and transports (see harness.py for the
invariants).

The short run (the default, a few seconds per variant) runs in CI; the long run, every
variant for longer with more tasks, is ``tox -e adversity`` (``ASYNCMONGO_ADVERSITY=long``;
``ASYNCMONGO_ADVERSITY_SECONDS`` and ``ASYNCMONGO_ADVERSITY_SEED`` override the duration
and the seed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.adversity.harness import Variant, run

LONG = os.environ.get("ASYNCMONGO_ADVERSITY") == "long"
SECONDS = float(os.environ.get("ASYNCMONGO_ADVERSITY_SECONDS", "30" if LONG else "3"))
TASKS = 200 if LONG else 100
SEED = int(os.environ.get("ASYNCMONGO_ADVERSITY_SEED", "18"))

pytestmark = [pytest.mark.adversity, pytest.mark.timeout(600 if LONG else 90)]

#: The short run: each feature at least once.
SHORT = [
    Variant("replset-plain", transactions=True),
    Variant("replset-tls-zstd-scram-uvloop", tls=True, compressor="zstd", auth=True,
            uvloop=True, change_stream=True),
    Variant("sharded-zlib", topology="sharded", compressor="zlib"),
    Variant("lb-snappy", topology="lb", compressor="snappy"),
]
#: The long run adds the combinations.
LONG_ONLY = [
    Variant("replset-snappy-changes", compressor="snappy", change_stream=True),
    Variant("replset-tls-txn", tls=True, transactions=True),
    Variant("replset-scram-zlib-txn-uvloop", auth=True, compressor="zlib", transactions=True,
            uvloop=True),
    Variant("sharded-tls-scram", topology="sharded", tls=True, auth=True),
    Variant("sharded-uvloop-txn", topology="sharded", uvloop=True, transactions=True),
    Variant("lb-tls-zstd-uvloop", topology="lb", tls=True, compressor="zstd", uvloop=True),
    Variant("lb-scram-txn", topology="lb", auth=True, transactions=True),
]
VARIANTS = SHORT + (LONG_ONLY if LONG else [])


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_workload_under_faults_keeps_the_invariants(variant: Variant, tmp_path: Path) -> None:
    ledger = run(variant, seconds=SECONDS, tasks=TASKS, tmp_path=tmp_path, seed=SEED)
    print(f"{variant}: {ledger.summary()}")
    assert not ledger.violations, "\n".join(ledger.violations[:20])
    assert len(ledger.acked) > 20  # the workload made progress through the faults
    assert sum(ledger.faults.values()) >= 5
