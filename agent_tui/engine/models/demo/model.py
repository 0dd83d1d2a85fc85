"""`DemoModel`: the offline default model (no account, no network).

With no API key and no `ANTHROPIC_BASE_URL`, agent-tui runs this scripted
agent so a fresh install shows the whole product: streaming answers, real
tool calls (several in one response, so they run in parallel), permission
prompts and the timeline.  It reads the last user message:

- tool results -> a short plain summary of them, `end_turn`;
- "list files", "read X", "search for Y", "run Z" / "$ Z", "write X with Y",
  joined by "and" / "then" / "," / ";" -> one response with a tool_use block
  per request (only for tools the request offers), `tool_use`;
- anything else -> a Markdown explanation of what it is and how to connect a
  real model.

The output is built as raw Messages-API event dicts and passed through
`StreamAccumulator`, so the loop sees exactly the event shapes the real API
produces.  Everything is deterministic: the same request gives the same
stream.  The pace is about 80 tokens/s (4 characters a token), scaled by
`speed`; `AGENT_TUI_DEMO_SPEED` sets the default (`0` or `inf`: no delay).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agent_tui.engine.models.base import ModelClient
from agent_tui.engine.models.stream import ModelRequest, StreamAccumulator, StreamEvent

from .plan import DemoPlan, plan_response

SPEED_ENV = "AGENT_TUI_DEMO_SPEED"
TOKENS_PER_SECOND = 80.0
CHARS_PER_TOKEN = 4


def _speed_from_env(default: float = 1.0) -> float:
    raw = os.environ.get(SPEED_ENV, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        return default


class DemoModel(ModelClient):
    """The offline scripted model."""

    name = "demo"
    label = "demo (offline)"
    offline = True

    def __init__(self, speed: float | None = None, *, requested: bool = False) -> None:
        """`speed` multiplies the pace (2 = twice as fast); `0` or `inf` streams
        with no delay.  Without it, `AGENT_TUI_DEMO_SPEED` or 1.0 applies.
        `requested`: the person asked for it (--offline) although a key is set."""
        self.requested = requested
        self.speed = _speed_from_env() if speed is None else float(speed)
        # The pace's clock and wait: tests give a virtual pair, so pacing is checked without wall time.
        self.clock: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def _chars_per_second(self) -> float | None:
        """None when there is no delay at all."""
        speed = self.speed
        if not speed > 0 or math.isinf(speed) or math.isnan(speed):
            return None
        return TOKENS_PER_SECOND * CHARS_PER_TOKEN * speed

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        plan = plan_response(request)
        acc = StreamAccumulator()
        rate = self._chars_per_second()
        clock, sleep = self.clock, self.sleep
        start = clock()
        emitted = 0
        events = 0
        for raw in _raw_events(request, plan):
            chars = raw.pop("_chars", 0)
            if chars:
                emitted += chars
                if rate is not None:
                    delay = start + emitted / rate - clock()
                    if delay > 0:
                        await sleep(delay)
            events += 1
            if rate is None and events % 64 == 0:
                await sleep(0)  # Let other tasks (and an abort) run.
            event = acc.feed(raw)
            if event is not None:
                yield event


# ---------------------------------------------------------------- raw events


def _text_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "tool_use":
            return len(value.get("name", "")) + len(json.dumps(value.get("input", {})))
        if kind == "tool_result":
            return _text_chars(value.get("content"))
        if kind in ("thinking", "redacted_thinking"):
            return len(value.get("thinking", "") or value.get("data", ""))
        if "text" in value:
            return _text_chars(value["text"])
        if "content" in value:
            return _text_chars(value["content"])
    return 0


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def _text_pieces(text: str) -> list[str]:
    """Deltas of a few characters (about one or two tokens), joined back exactly."""
    return re.findall(r"\s*\S{1,6}|\s+", text)


def _json_pieces(raw: str) -> list[str]:
    return [raw[i : i + 12] for i in range(0, len(raw), 12)]


def _message_id(request: ModelRequest) -> str:
    digest = hashlib.sha256(
        json.dumps(
            [request.model, request.system, request.messages, [t.get("name") for t in request.tools]],
            sort_keys=True,
            default=str,
        ).encode("utf-8")
    ).hexdigest()
    return f"msg_demo_{digest[:24]}"


def _raw_events(request: ModelRequest, plan: DemoPlan) -> list[dict[str, Any]]:
    """The raw Messages-API events for `plan`, cut at `request.max_tokens`.

    Delta events carry a private `_chars` count used for pacing (removed
    before they reach the accumulator)."""
    input_tokens = _tokens(_text_chars(request.system) + _text_chars(request.messages) + len(json.dumps(request.tools)))
    budget = max(0, int(request.max_tokens)) * CHARS_PER_TOKEN
    events: list[dict[str, Any]] = [_message_start(request, input_tokens), {"type": "ping"}]
    used = 0
    cut = False
    index = 0
    if plan.text:
        text = plan.text
        if len(text) > budget:
            text, cut = text[:budget], True
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        events.extend(_delta(index, {"type": "text_delta", "text": piece}, piece) for piece in _text_pieces(text))
        events.append({"type": "content_block_stop", "index": index})
        used += len(text)
        index += 1
    for call in plan.tools:
        if cut or used >= budget:
            cut = True
            break
        raw = json.dumps(call.input, ensure_ascii=False)
        if used + len(raw) > budget:
            raw, cut = raw[: budget - used], True
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append(
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}
        )
        events.extend(
            _delta(index, {"type": "input_json_delta", "partial_json": piece}, piece) for piece in _json_pieces(raw)
        )
        events.append({"type": "content_block_stop", "index": index})
        used += len(raw)
        index += 1
    stop_reason = "max_tokens" if cut else "tool_use" if plan.tools else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": max(1, _tokens(used))},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _message_start(request: ModelRequest, input_tokens: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": _message_id(request),
            "type": "message",
            "role": "assistant",
            "model": request.model or DemoModel.name,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }


def _delta(index: int, delta: dict[str, Any], piece: str) -> dict[str, Any]:
    """A content_block_delta carrying `piece`, with its length for pacing."""
    return {"type": "content_block_delta", "index": index, "delta": delta, "_chars": len(piece)}
