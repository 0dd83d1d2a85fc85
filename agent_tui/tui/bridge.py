"""The bridge: bus events in, Textual messages out.

One subscription, read by one worker.  Each wake-up drains everything queued
and posts it as a single `EngineEvents` batch, then waits until the app has
handled that batch before reading again.  While the app is busy the events
wait in the bus subscription, which merges text deltas and keeps every other
event, so the engine never blocks and a fast stream costs one message per
frame the app can draw, not one per delta.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.message import Message
from textual.message_pump import MessagePump

from ..engine import events as ev
from .safe_text import safe_event

if TYPE_CHECKING:
    from ..engine import Session, Subscription


class EngineEvents(Message):
    """Bus events in publish order (consecutive deltas of one block already joined)."""

    def __init__(self, events: list[ev.Event], handled: asyncio.Event) -> None:
        super().__init__()
        # Live or replayed, no model or tool text reaches the screen with escape sequences in it.
        self.events = [safe_event(e) for e in events]
        self.handled = handled


class Bridge:
    def __init__(self, session: Session, target: MessagePump) -> None:
        self._target = target
        # Subscribed at once so nothing published before the worker starts is missed.
        self._subscription: Subscription = session.subscribe("tui")

    async def run(self) -> None:
        sub = self._subscription
        try:
            while True:
                try:
                    first = await sub.get()
                except StopAsyncIteration:
                    return
                batch = [first]
                while (event := sub.get_nowait()) is not None:
                    batch.append(event)
                handled = asyncio.Event()
                self._target.post_message(EngineEvents(merge_deltas(batch), handled))
                await handled.wait()
        finally:
            sub.close()

    def close(self) -> None:
        self._subscription.close()


def merge_deltas(batch: list[ev.Event]) -> list[ev.Event]:
    """Join runs of text (or thinking) deltas of the same block; keep everything else."""
    out: list[ev.Event] = []
    parts: list[str] = []
    for event in batch:
        last = out[-1] if out else None
        if (
            isinstance(event, ev.TextDelta | ev.ThinkingDelta)
            and type(last) is type(event)
            and last.index == event.index  # type: ignore[union-attr]
            and last.parent_tool_use_id == event.parent_tool_use_id
        ):
            parts.append(event.text)
            continue
        _flush(out, parts)
        out.append(event)
        if isinstance(event, ev.TextDelta | ev.ThinkingDelta):
            parts = [event.text]
    _flush(out, parts)
    return out


def _flush(out: list[ev.Event], parts: list[str]) -> None:
    if len(parts) > 1:
        last = out[-1]
        out[-1] = type(last)(index=last.index, text="".join(parts), parent_tool_use_id=last.parent_tool_use_id)  # type: ignore[attr-defined,call-arg]
    parts.clear()
