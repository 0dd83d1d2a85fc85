"""What is known of each model, in one table keyed by provider and model-name prefix: its
context window, output cap, whether it thinks, and its list price (US dollars per million
tokens).  Settings (`models`) add or override entries by exact model name, for the local and
gateway models no table can know.

Sources: Anthropic's and OpenAI's model and pricing pages, standard (non-batch) rates.  Claude
prices are by family and version (engine/pricing.py: dated and "-latest" names match their
family); OpenAI's by prefix here.  OpenAI bills no cache-write premium and reads cached
prompt tokens at its cached-input rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True, slots=True)
class ModelFacts:
    context_window: int | None = None
    output_cap: int | None = None
    thinking: bool | None = None
    price: Price | None = None


def _openai(window: int, cap: int, inp: float, out: float, cached: float, *, thinking: bool = False) -> ModelFacts:
    return ModelFacts(window, cap, thinking, Price(input=inp, output=out, cache_write=inp, cache_read=cached))


# (provider, model-name prefix) -> facts; the longest matching prefix wins.
FACTS: dict[tuple[str, str], ModelFacts] = {
    ("anthropic", "claude-opus-4"): ModelFacts(200_000, 32_000, True),
    ("anthropic", "claude-sonnet-4"): ModelFacts(200_000, 64_000, True),
    ("anthropic", "claude-haiku-4"): ModelFacts(200_000, 64_000, True),
    ("anthropic", "claude-3-7"): ModelFacts(200_000, 64_000, True),
    ("anthropic", "claude-3-5"): ModelFacts(200_000, 8_192, False),
    ("anthropic", "claude"): ModelFacts(200_000, None, None),
    ("demo", "demo"): ModelFacts(200_000, None, False),
    ("openai", "gpt-4o-mini"): _openai(128_000, 16_384, 0.15, 0.60, 0.075),
    ("openai", "gpt-4o"): _openai(128_000, 16_384, 2.50, 10.00, 1.25),
    ("openai", "gpt-4.1-nano"): _openai(1_047_576, 32_768, 0.10, 0.40, 0.025),
    ("openai", "gpt-4.1-mini"): _openai(1_047_576, 32_768, 0.40, 1.60, 0.10),
    ("openai", "gpt-4.1"): _openai(1_047_576, 32_768, 2.00, 8.00, 0.50),
    ("openai", "gpt-5-nano"): _openai(400_000, 128_000, 0.05, 0.40, 0.005, thinking=True),
    ("openai", "gpt-5-mini"): _openai(400_000, 128_000, 0.25, 2.00, 0.025, thinking=True),
    ("openai", "gpt-5"): _openai(400_000, 128_000, 1.25, 10.00, 0.125, thinking=True),
    ("openai", "o4-mini"): _openai(200_000, 100_000, 1.10, 4.40, 0.275, thinking=True),
    ("openai", "o3-mini"): _openai(200_000, 100_000, 1.10, 4.40, 0.55, thinking=True),
    ("openai", "o3"): _openai(200_000, 100_000, 2.00, 8.00, 0.50, thinking=True),
}

# Entries from settings (`models`), by exact model name: they win over the table.
_overrides: dict[str, ModelFacts] = {}


def facts_for(model: str, provider: str | None = None) -> ModelFacts:
    """What is known of `model` (empty facts when nothing is); `provider` narrows the table."""
    override = _overrides.get(model)
    best: ModelFacts | None = None
    best_len = -1
    for (owner, prefix), facts in FACTS.items():
        if (provider is None or owner == provider) and model.startswith(prefix) and len(prefix) > best_len:
            best, best_len = facts, len(prefix)
    base = best or ModelFacts()
    if override is None:
        return base
    return ModelFacts(
        override.context_window or base.context_window,
        override.output_cap or base.output_cap,
        base.thinking if override.thinking is None else override.thinking,
        override.price or base.price,
    )


def overridden() -> frozenset[str]:
    """The model names the `models` setting gives facts for."""
    return frozenset(_overrides)


def set_overrides(models: Mapping[str, Any]) -> list[str]:
    """Take the `models` setting ({name: {contextWindow, maxOutputTokens, thinking, price:
    {input, output, cacheRead, cacheWrite}}}); returns the problems found (entries skipped)."""
    _overrides.clear()
    problems: list[str] = []
    for name, entry in models.items():
        try:
            _overrides[name] = _parse(entry)
        except (TypeError, ValueError) as exc:
            problems.append(f"models.{name}: {exc}; ignored")
    return problems


def _parse(entry: Any) -> ModelFacts:
    if not isinstance(entry, Mapping):
        raise TypeError("must be an object")
    facts = ModelFacts()
    for key, attr in (("contextWindow", "context_window"), ("maxOutputTokens", "output_cap")):
        value = entry.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{key} must be a positive integer")
            facts = replace(facts, **{attr: value})
    if entry.get("thinking") is not None:
        if not isinstance(entry["thinking"], bool):
            raise ValueError("thinking must be true or false")
        facts = replace(facts, thinking=entry["thinking"])
    price = entry.get("price")
    if price is not None:
        if not isinstance(price, Mapping):
            raise TypeError("price must be an object")
        rates = {k: price.get(k) for k in ("input", "output", "cacheRead", "cacheWrite")}
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0)
               for v in rates.values()):
            raise ValueError("price rates must be numbers of dollars per million tokens")
        inp, out = float(rates["input"] or 0), float(rates["output"] or 0)
        cache_read = float(rates["cacheRead"] if rates["cacheRead"] is not None else inp)
        cache_write = float(rates["cacheWrite"] if rates["cacheWrite"] is not None else inp)
        facts = replace(facts, price=Price(inp, out, cache_write, cache_read))
    return facts
