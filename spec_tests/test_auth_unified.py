"""The auth spec's unified tests (spec_tests/data/auth/unified: MONGODB-OIDC) through the
unified runner, against asyncmongo.testing.

The simulated deployment with authentication on accepts MONGODB-OIDC tokens of a test
identity provider (RS256-signed, checked for expiry, audience and issuer); the runner gives
``client0`` the ``ENVIRONMENT:test`` credential, reading a token of that provider from the
file OIDC_TOKEN_FILE names (spec_tests/unified/target.py), and the fail points (391 on find
and insert, 18 on saslStart, a closed connection) are the simulator's failCommand.

Every test passes, or is skipped with the reason the runner gives.
"""

from __future__ import annotations

import pytest

from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("auth"))
async def test_auth_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)
