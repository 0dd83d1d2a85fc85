"""EventBus: one publisher side, one unbounded queue per subscriber.

`publish` never awaits, so a slow subscriber can never stall the loop.  A
subscriber that falls behind gets consecutive text/thinking deltas merged
into one (the only events that may be coalesced); everything else arrives
exactly as published, in order.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from .events import COALESCIBLE, Event
from .textbuffer import TextBuffer


class _PendingDelta:
    """A run of queued deltas for one block, joined as it grows (linear cost, about the text's size)."""

    __slots__ = ("first", "parts", "count")

    def __init__(self, first: Event) -> None:
        self.first = first
        self.parts = TextBuffer(first.text)  # type: ignore[attr-defined]
        self.count = 1

    def matches(self, event: Event) -> bool:
        f = self.first
        return (
            type(event) is type(f)
            and event.index == f.index  # type: ignore[attr-defined]
            and event.parent_tool_use_id == f.parent_tool_use_id
        )

    def materialize(self) -> Event:
        if self.count == 1:
            return self.first
        return type(self.first)(
            index=self.first.index,  # type: ignore[attr-defined]
            text=self.parts.getvalue(),
            parent_tool_use_id=self.first.parent_tool_use_id,
        )


class Subscription:
    """An async iterator of events for one subscriber."""

    def __init__(self, bus: EventBus, name: str, coalesce: bool) -> None:
        self.name = name
        self._bus = bus
        self._coalesce = coalesce
        self._items: deque[Event | _PendingDelta] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def _push(self, event: Event) -> None:
        if self._closed:
            return
        items = self._items
        if self._coalesce and isinstance(event, COALESCIBLE):
            tail = items[-1] if items else None
            if isinstance(tail, _PendingDelta) and tail.matches(event):
                tail.parts.append(event.text)  # type: ignore[attr-defined]
                tail.count += 1
                return
            items.append(_PendingDelta(event))
        else:
            items.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def get_nowait(self) -> Event | None:
        if not self._items:
            return None
        item = self._items.popleft()
        return item.materialize() if isinstance(item, _PendingDelta) else item

    def pending(self) -> int:
        return len(self._items)

    async def get(self) -> Event:
        while not self._items:
            if self._closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        event = self.get_nowait()
        assert event is not None
        return event

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        return await self.get()

    def close(self) -> None:
        """Stop after the events already queued have been read."""
        self._closed = True
        self._bus._subscriptions.discard(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self._listeners: list[Callable[[Event], Any]] = []

    def subscribe(self, name: str = "subscriber", *, coalesce: bool = True) -> Subscription:
        sub = Subscription(self, name, coalesce)
        self._subscriptions.add(sub)
        return sub

    def add_listener(self, callback: Callable[[Event], Any]) -> Callable[[], None]:
        """A synchronous subscriber, called inline; for cheap sinks (persistence, tests)."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    def publish(self, event: Event) -> None:
        for sub in self._subscriptions:
            sub._push(event)
        for listener in self._listeners:
            listener(event)

    def close(self) -> None:
        for sub in list(self._subscriptions):
            sub.close()


def child_emitter(emit: Callable[[Event], None], parent_tool_use_id: str | None) -> Callable[[Event], None]:
    """`emit` for a subagent: each event it publishes is tagged with the parent's Agent tool_use
    id (an event already tagged keeps its own); at the top level, `emit` itself."""
    if parent_tool_use_id is None:
        return emit

    def tagged(event: Event) -> None:
        if event.parent_tool_use_id is None:
            event = dataclasses.replace(event, parent_tool_use_id=parent_tool_use_id)
        emit(event)

    return tagged
