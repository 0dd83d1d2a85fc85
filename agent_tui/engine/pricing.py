"""What the tokens cost: Anthropic's list prices per model family (OpenAI's and those set in
settings come from engine/models/facts.py), in US dollars per million tokens.

Source: the Claude API pricing page (platform.claude.com/docs/en/about-claude/pricing),
standard (non-batch) rates.  Cache writes are the 5-minute rate (the
`ephemeral` default, 1.25x input); cache reads are 0.1x input.  A model not
in the table has no price: front ends show its tokens only.
"""

from __future__ import annotations

from collections.abc import Mapping

from .models.base import model_generation
from .models.facts import Price, facts_for

__all__ = ["Price", "add_usage", "cost_usd", "format_usd", "price_for", "total_cost_usd"]

# (family, from version, before version, price): dated and "-latest" names match their family.
PRICES: tuple[tuple[str, tuple[int, int], tuple[int, int], Price], ...] = (
    ("opus", (4, 5), (5, 0), Price(input=5.00, output=25.00, cache_write=6.25, cache_read=0.50)),
    ("opus", (3, 0), (4, 5), Price(input=15.00, output=75.00, cache_write=18.75, cache_read=1.50)),
    ("sonnet", (3, 5), (5, 0), Price(input=3.00, output=15.00, cache_write=3.75, cache_read=0.30)),
    ("haiku", (4, 5), (4, 6), Price(input=1.00, output=5.00, cache_write=1.25, cache_read=0.10)),
    ("haiku", (3, 5), (3, 6), Price(input=0.80, output=4.00, cache_write=1.00, cache_read=0.08)),
    ("haiku", (3, 0), (3, 1), Price(input=0.25, output=1.25, cache_write=0.30, cache_read=0.03)),
)


def price_for(model: str) -> Price | None:
    """The list price of `model` (a price in the `models` setting first, then the Claude
    families, then engine/models/facts.py), or None when it has no known price."""
    facts = facts_for(model)
    generation = model_generation(model)
    if generation is None or facts.price is not None:
        return facts.price
    family, version = generation
    for name, first, before, price in PRICES:
        if name == family and first <= version < before:
            return price
    return None


def cost_usd(model: str, usage: Mapping[str, int]) -> float | None:
    """The dollar cost of `usage` (a Messages-API usage object) on `model`; None when unpriced."""
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.get("input_tokens", 0) * price.input
        + usage.get("output_tokens", 0) * price.output
        + usage.get("cache_creation_input_tokens", 0) * price.cache_write
        + usage.get("cache_read_input_tokens", 0) * price.cache_read
    ) / 1_000_000


def total_cost_usd(usage_by_model: Mapping[str, Mapping[str, int]]) -> float | None:
    """The cost of every model's usage; None when any model that used tokens has no price."""
    total = 0.0
    for model, usage in usage_by_model.items():
        cost = cost_usd(model, usage)
        if cost is None:
            if any(usage.values()):
                return None
            continue
        total += cost
    return total


def add_usage(totals: dict[str, int], usage: Mapping[str, int]) -> None:
    for key, value in usage.items():
        totals[key] = totals.get(key, 0) + value


def format_usd(amount: float) -> str:
    """$0.0042 for small amounts, $1.23 once it reaches a cent's worth of precision."""
    return f"${amount:.4f}" if amount < 0.5 else f"${amount:.2f}"
