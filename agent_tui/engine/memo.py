"""What each step before a request made of each history message, kept so that a request
costs what its new messages cost, not what the whole history does (docs/architecture.md §3).

The history's messages are never changed once complete: a step that alters one (the
tool-result budget, microcompact, a compaction) makes a new message and shares the rest.
So a step's results for the messages a request shares with the one before it (the same
objects, in the same places: the longest common prefix, compared by identity in C) are
its results from last time, and only the messages after that prefix are worked on (of
those, the ones the last request had too, found by identity, keep their results).

One memo serves one conversation (a session's main queries, or one subagent's query); the
steps that use it run one at a time, in a worker thread (never on the event loop's).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items `a` and `b` share (the same objects)."""
    same = list(map(operator.is_, a, b))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


class PrefixMemo(Generic[V]):
    """`fn` over a list of messages, remembered for the prefix the last list shares."""

    __slots__ = ("_items", "_values")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._values: list[V] = []

    def map(self, items: Sequence[Any], fn: Callable[[Any], V]) -> list[V]:
        last, last_values = self._items, self._values
        kept = common_prefix(last, items)
        values = last_values[:kept]
        if kept < len(last) and kept < len(items):
            # Messages changed in place (microcompact clearing old results): the messages after
            # the first of them that the last list had too keep their values.
            where = {id(item): n for n, item in enumerate(last[kept:], kept)}
            for item in items[kept:]:
                n = where.get(id(item))
                values.append(last_values[n] if n is not None and last[n] is item else fn(item))
        else:
            values += [fn(item) for item in items[kept:]]
        self._items, self._values = list(items), values
        return values


@dataclass
class CheckState:
    """The history last found valid (messages.check_history): its messages and where each
    tool_use id is, so a request checks only what follows it."""

    messages: list[Any] = field(default_factory=list)
    ids: dict[Any, int] = field(default_factory=dict)


class EncodedMemo(PrefixMemo[bytes]):
    """Each message's JSON as one provider sends it, and the chunks of the last body sent
    (models/body.py): a body whose first chunks are made of the same pieces reuses them."""

    __slots__ = ("chunks",)

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[tuple[tuple[bytes, ...], bytes]] = []


class HistoryMemo:
    """One conversation's memos: per step, and per provider for the request's JSON."""

    def __init__(self) -> None:
        self.api_form: PrefixMemo[Any] = PrefixMemo()  # messages.normalize_for_api
        self.media_ok: PrefixMemo[bool] = PrefixMemo()  # images.check_images
        self.under_caps: PrefixMemo[bool] = PrefixMemo()  # the tool-result budget
        self.check = CheckState()
        # Microcompact's copy of each message it clears, by the original's identity (with the
        # blocks cleared): a request and the warm-up ahead of it get the same object.
        self.cleared: dict[int, tuple[Any, tuple[int, ...], Any]] = {}
        self.ended = CheckState()  # the history each prompt ends with (Session's end-of-prompt check)
        self._encoded: dict[str, EncodedMemo] = {}

    def encoded(self, provider: str) -> EncodedMemo:
        """Each message's JSON as `provider` sends it."""
        memo = self._encoded.get(provider)
        if memo is None:
            memo = self._encoded[provider] = EncodedMemo()
        return memo
