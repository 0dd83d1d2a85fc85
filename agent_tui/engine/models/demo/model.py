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
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from agent_tui.engine.models.base import ModelClient

if TYPE_CHECKING:  # what answering needs loads with the first request (the first frame shows only the label)
    from agent_tui.engine.models.stream import ModelRequest, StreamEvent

SPEED_ENV = "AGENT_TUI_DEMO_SPEED"
TOKENS_PER_SECOND = 80.0


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
        from .events import CHARS_PER_TOKEN

        return TOKENS_PER_SECOND * CHARS_PER_TOKEN * speed

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from agent_tui.engine.models.stream import StreamAccumulator

        from .events import raw_events
        from .plan import plan_response

        plan = plan_response(request)
        acc = StreamAccumulator()
        rate = self._chars_per_second()
        clock, sleep = self.clock, self.sleep
        start = clock()
        emitted = 0
        events = 0
        for raw in raw_events(request, plan):
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
