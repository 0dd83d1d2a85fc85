"""What fills the context window (docs/architecture.md §7): token estimates and the last usage (`count_tokens`),
the compaction settings and thresholds, `PipelineEnv` (what the pipeline and compaction work
with) and `/context`'s breakdown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import events as ev
from ..messages import Message, blocks
from ..models.base import ModelClient

CHARS_PER_TOKEN = 4
TOOL_RESULT_CAPS: Mapping[str, int] = {"Bash": 30_000, "Grep": 20_000}
DEFAULT_RESULT_CAP = 100_000
PREVIEW_CHARS = 2_000
MAX_COMPACT_FAILURES = 3
AUTOCOMPACT_BUFFER = 13_000
SUMMARY_MAX_TOKENS = 20_000
# An image or a document counts as this many tokens in an estimate.
_ATTACHMENT_TOKENS = 2_000

# ---------------------------------------------------------------- settings


@dataclass(frozen=True)
class CompactionSettings:
    """The `compaction` settings table (keys in Claude Code's camelCase spelling)."""

    auto: bool = True
    # Auto-compact threshold as a percent of the window; None: docs/architecture.md §7's formula.
    threshold_percent: float | None = None
    microcompact_percent: float = 60.0
    microcompact_keep: int = 6
    blocking_percent: float = 95.0
    summary_max_tokens: int = SUMMARY_MAX_TOKENS
    result_caps: Mapping[str, int] = field(default_factory=lambda: dict(TOOL_RESULT_CAPS))
    default_result_cap: int = DEFAULT_RESULT_CAP
    preview_chars: int = PREVIEW_CHARS

    _KEYS = {
        "auto": ("auto", bool),
        "thresholdPercent": ("threshold_percent", (int, float)),
        "microcompactPercent": ("microcompact_percent", (int, float)),
        "microcompactKeep": ("microcompact_keep", int),
        "blockingPercent": ("blocking_percent", (int, float)),
        "summaryMaxTokens": ("summary_max_tokens", int),
        "defaultResultCap": ("default_result_cap", int),
        "previewChars": ("preview_chars", int),
    }

    @classmethod
    def from_settings(cls, table: Mapping[str, Any] | None) -> CompactionSettings:
        """Settings from the `compaction` table; a value of the wrong type keeps its default."""
        values: dict[str, Any] = {}
        for key, value in (table or {}).items():
            if key == "toolResultCaps" and isinstance(value, dict):
                caps = {n: v for n, v in value.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
                values["result_caps"] = {**TOOL_RESULT_CAPS, **caps}
                continue
            spec = cls._KEYS.get(key)
            if spec is None:
                continue
            attr, kind = spec
            if kind is bool and isinstance(value, bool):
                values[attr] = value
            elif kind is not bool and isinstance(value, kind) and not isinstance(value, bool) and value >= 0:
                values[attr] = value
        return cls(**values)

    def auto_compact_threshold(self, window: int, max_output: int) -> int:
        if self.threshold_percent is not None:
            return int(window * self.threshold_percent / 100)
        return window - min(max_output, SUMMARY_MAX_TOKENS) - AUTOCOMPACT_BUFFER

    def microcompact_threshold(self, window: int) -> int:
        return int(window * self.microcompact_percent / 100)

    def blocking_limit(self, window: int) -> int:
        return int(window * self.blocking_percent / 100)


# ---------------------------------------------------------------- accounting


@dataclass(frozen=True, slots=True)
class ContextTracking:
    """What the loop knows about the history's size, carried from request to request."""

    # input + cache read + cache creation + output of the last response.
    api_tokens: int = 0
    # How many history messages that usage covers (0: no usage yet, estimate everything).
    api_messages: int = 0
    # Consecutive failed autocompactions; at MAX_COMPACT_FAILURES autocompact stops trying.
    compact_failures: int = 0

    def with_usage(self, usage: Mapping[str, int], messages: int, *, output: bool = True) -> ContextTracking:
        tokens = usage_tokens(usage) - (0 if output else usage.get("output_tokens", 0))
        return replace(self, api_tokens=tokens, api_messages=messages)

    def forget_usage(self) -> ContextTracking:
        """For a history that no longer matches the last usage (compacted, repaired, stripped)."""
        return replace(self, api_tokens=0, api_messages=0)


def usage_tokens(usage: Mapping[str, int]) -> int:
    return (
        usage.get("input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
        + usage.get("output_tokens", 0)
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def block_chars(block: Mapping[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return len(block.get("text") or "")
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return len(content) + 16
        if isinstance(content, list):
            return 16 + sum(block_chars(b) for b in content if isinstance(b, dict))
        return 16
    if kind == "tool_use":
        return len(block.get("name") or "") + len(_dumps(block.get("input") or {})) + 16
    if kind == "thinking":
        return len(block.get("thinking") or "")
    if kind == "redacted_thinking":
        return len(block.get("data") or "")
    if kind in ("image", "document"):
        return _ATTACHMENT_TOKENS * CHARS_PER_TOKEN
    return len(_dumps(block))


def message_chars(message: Message) -> int:
    content = message.get("content")
    if isinstance(content, str):
        return len(content)
    return sum(block_chars(b) for b in content or ())


def estimate_tokens(messages: list[Message]) -> int:
    """chars/4 over the content of `messages` (the API's tokenizer is not available offline)."""
    return -(-sum(message_chars(m) for m in messages) // CHARS_PER_TOKEN)


def estimate_text(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def count_tokens(messages: list[Message], tracking: ContextTracking, overhead: int) -> int:
    """The context size of a request carrying `messages`: the last usage for what it
    covered plus an estimate for the rest; `overhead` (system prompt and tools) is
    counted only when there is no usage to start from."""
    covered = tracking.api_messages
    if covered and covered <= len(messages):
        return tracking.api_tokens + estimate_tokens(messages[covered:])
    return overhead + estimate_tokens(messages)


# ---------------------------------------------------------------- steps 1 and 2


# ---------------------------------------------------------------- the pipeline


@dataclass(frozen=True)
class PipelineEnv:
    """What the pipeline needs from the query: the model, the request shape, the bus."""

    model: ModelClient
    model_name: str
    window: int
    max_output: int
    system: str | list[dict[str, Any]]
    tools: list[dict[str, Any]]
    settings: CompactionSettings
    save_dir: Path
    emit: Callable[[ev.Event], None]
    abort: asyncio.Event
    # query.RetryPolicy: `max_retries` and `delay(attempt, retry_after)`.
    retry: Any
    usage_totals: dict[str, int] = field(default_factory=dict)
    # The same usage per model name (what it cost: engine/pricing.py).
    usage_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    # A subagent's: its PreCompact hooks say so (`emit` already tags its events).
    parent_tool_use_id: str | None = None
    # Mark the prefix for the prompt cache (the summary request shares it with the conversation).
    prompt_caching: bool = False
    # hooks.HookRunner: PreCompact hooks run before each summary request.
    hooks: Any = None

    @cached_property
    def overhead(self) -> int:
        """System prompt and tool definitions, as an estimate."""
        system = self.system if isinstance(self.system, str) else "\n\n".join(
            b.get("text", "") for b in self.system
        )
        tools = estimate_text(_dumps(self.tools)) if self.tools else 0
        return estimate_text(system) + tools

    @property
    def threshold(self) -> int:
        return self.settings.auto_compact_threshold(self.window, self.max_output)

    def publish_estimate(self, tokens: int) -> None:
        """A `usage` event for the gauge when the history changed between requests."""
        self.emit(
            ev.Usage(
                input_tokens=0,
                output_tokens=0,
                cache_read_input_tokens=0,
                cache_creation_input_tokens=0,
                context_tokens=tokens,
                context_window=self.window,
                auto_compact_threshold=self.threshold,
            )
        )


# ---------------------------------------------------------------- /context


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """What fills the context window (for `/context`); parts are chars/4 estimates."""

    model: str
    window: int
    auto_compact_threshold: int
    system_prompt: int
    memory_files: int
    tools: int
    messages: int
    tool_results: int
    # The whole request: the count-tokens figure when `exact`, else last usage + estimate.
    total: int
    exact: bool = False
    auto_compact: bool = True

    @property
    def free(self) -> int:
        return max(0, self.window - self.total)

    def rows(self) -> list[tuple[str, int]]:
        """The parts and the free space; the parts (chars/4 estimates) are scaled to the
        used total, so the rows add up to exactly the window."""
        labels = ("System prompt", "Memory files", "Tools", "Messages", "Tool results")
        parts = [self.system_prompt, self.memory_files, self.tools, self.messages, self.tool_results]
        used = min(self.total, self.window)
        estimated = sum(parts)
        if estimated and estimated != used:
            parts = [part * used // estimated for part in parts]
            # Rounding leftovers go to the largest part.
            parts[parts.index(max(parts))] += used - sum(parts)
        return [*zip(labels, parts, strict=False), ("Free space", self.window - used)]


def context_breakdown(
    *,
    model: str,
    system: str,
    memory: str,
    tools: list[dict[str, Any]],
    messages: list[Message],
    tracking: ContextTracking,
    window: int,
    settings: CompactionSettings,
    max_output: int,
    exact_total: int | None = None,
) -> ContextBreakdown:
    results = 0
    other = 0
    for m in messages:
        for b in blocks(m):
            if b.get("type") == "tool_result":
                results += block_chars(b)
            else:
                other += block_chars(b)
    memory_tokens = estimate_text(memory) if memory and memory in system else 0
    system_tokens = estimate_text(system) - memory_tokens
    tools_tokens = estimate_text(_dumps(tools)) if tools else 0
    total = exact_total
    if total is None:
        total = count_tokens(messages, tracking, system_tokens + memory_tokens + tools_tokens)
    return ContextBreakdown(
        model=model,
        window=window,
        auto_compact_threshold=settings.auto_compact_threshold(window, max_output),
        system_prompt=system_tokens,
        memory_files=memory_tokens,
        tools=tools_tokens,
        messages=-(-other // CHARS_PER_TOKEN),
        tool_results=-(-results // CHARS_PER_TOKEN),
        total=total,
        exact=exact_total is not None,
        auto_compact=settings.auto,
    )
