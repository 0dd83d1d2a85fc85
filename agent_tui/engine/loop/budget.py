"""The token budget (`--max-budget-tokens`): a stop condition from the seeds.

A query may spend this many output tokens.  When the model wants another turn
(tools, or a Stop hook that asks for more) past BUDGET_NUDGE_PERCENT of the
budget, the loop continues with a nudge to wrap up (`token_budget_continuation`);
it stops (`token_budget`) when the budget is spent, also when the model stops on
its own, or on diminishing returns: three continuations in a row that each
produced under DIMINISHING_OUTPUT_TOKENS.
"""

from __future__ import annotations

from dataclasses import dataclass

BUDGET_NUDGE_PERCENT = 90
DIMINISHING_OUTPUT_TOKENS = 500
DIMINISHING_CONTINUATIONS = 3


@dataclass(frozen=True, slots=True)
class BudgetTracking:
    continuations: int = 0
    spent_at_last_check: int = 0
    # Consecutive continuations that produced under DIMINISHING_OUTPUT_TOKENS.
    small_in_a_row: int = 0


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    # "go" (under the threshold) | "nudge" (wrap up, then continue) | "stop"
    action: str
    tracking: BudgetTracking
    message: str = ""
    # The budget is used up (a stop for that reason, not for diminishing returns).
    spent: bool = False


def check_token_budget(budget: int, spent: int, tracking: BudgetTracking) -> BudgetVerdict:
    """The `--max-budget-tokens` decision when the model wants another turn.

    Past BUDGET_NUDGE_PERCENT of the budget each turn gets a nudge to wrap up;
    the query stops when the budget is spent, or when three continuations in a
    row each produced under DIMINISHING_OUTPUT_TOKENS output tokens."""
    if spent >= budget:
        return BudgetVerdict(
            "stop", tracking, f"Stopped: the token budget is spent ({spent:,} of {budget:,} output tokens).", True
        )
    if spent * 100 < budget * BUDGET_NUDGE_PERCENT:
        return BudgetVerdict("go", tracking)
    small = tracking.small_in_a_row
    if tracking.continuations:
        small = small + 1 if spent - tracking.spent_at_last_check < DIMINISHING_OUTPUT_TOKENS else 0
    if small >= DIMINISHING_CONTINUATIONS:
        return BudgetVerdict(
            "stop",
            tracking,
            f"Stopped on diminishing returns: {small} continuations in a row each produced under "
            f"{DIMINISHING_OUTPUT_TOKENS} output tokens ({spent:,} of {budget:,} tokens of the budget used).",
        )
    pct = spent * 100 // budget
    return BudgetVerdict(
        "nudge",
        BudgetTracking(tracking.continuations + 1, spent, small),
        f"Token budget: {spent:,} of {budget:,} output tokens used ({pct}%). Wrap up now: finish the step "
        "you are on, skip anything optional, and give your final answer.",
    )
