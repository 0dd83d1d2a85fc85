"""What the front end remembers about tool calls and model turns.

One `ToolRecord` per tool_use id and one `TurnRecord` per model request,
stamped with the app's clock when each event arrives.  The timeline and the
transcript both draw from these records, so a row and its summary line never
disagree.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..paths import shown_path

# The rows of a burst (tool calls) are taken into the transcript and the timeline together, on one
# grid of this period: each take lays the whole screen out again (docs/architecture.md §8).
BURST_PERIOD = 0.1


def burst_delay(last: float, now: float) -> float:
    """Seconds from `now` to the first point of the burst grid at least `BURST_PERIOD` after `last`
    (both on `time.monotonic()`), so that the transcript's take and the timeline's fall on one frame."""
    return max(math.ceil((last + BURST_PERIOD) / BURST_PERIOD) * BURST_PERIOD - now, 0.0)


class ToolStatus(StrEnum):
    """Where a tool call is: the executor's statuses (docs/architecture.md §4), then the outcome of `tool_finished`."""

    QUEUED = "queued"
    AWAITING = "awaiting_permission"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"
    CANCELLED = "cancelled"
    REJECTED = "rejected"

    @property
    def finished(self) -> bool:
        return self in _FINISHED

    @property
    def icon(self) -> tuple[str, str]:
        """The glyph and its style, the same in the timeline and the transcript."""
        return _ICONS[self]

    @property
    def style(self) -> str:
        """The style of the status's bar and elapsed time."""
        return _STYLES[self]


_FINISHED = frozenset({ToolStatus.DONE, ToolStatus.ERROR, ToolStatus.CANCELLED, ToolStatus.REJECTED})
_ICONS = {
    ToolStatus.QUEUED: ("○", "$text-muted"),
    ToolStatus.AWAITING: ("?", "$text-warning bold"),
    ToolStatus.RUNNING: ("◐", "$text-accent"),
    ToolStatus.DONE: ("●", "$text-success"),
    ToolStatus.ERROR: ("✗", "$text-error"),
    ToolStatus.CANCELLED: ("⊘", "$text-muted"),
    ToolStatus.REJECTED: ("⊘", "$text-warning"),
}
_STYLES = {
    ToolStatus.QUEUED: "$text-muted",
    ToolStatus.AWAITING: "$text-warning",
    ToolStatus.RUNNING: "$text-accent",
    ToolStatus.DONE: "$text-success",
    ToolStatus.ERROR: "$text-error",
    ToolStatus.CANCELLED: "$text-muted",
    ToolStatus.REJECTED: "$text-warning",
}


@dataclass
class TurnRecord:
    """One model request: when it started, when its stream ended, when the turn closed."""

    number: int
    started_at: float
    stream_end_at: float | None = None
    closed_at: float | None = None
    usage_events: int = 0
    tools: list[str] = field(default_factory=list)

    def axis_end(self, now: float, tools: dict[str, ToolRecord]) -> float:
        if self.closed_at is not None:
            ends = [self.closed_at]
        else:
            ends = [now]
        return max(ends + [t.finished_at for t in (tools[i] for i in self.tools if i in tools) if t.finished_at])


@dataclass
class ToolRecord:
    tool_use_id: str
    name: str
    summary: str
    input: dict[str, Any]
    queued_at: float
    turn: TurnRecord | None = None
    parent_tool_use_id: str | None = None
    status: ToolStatus = ToolStatus.QUEUED
    started_at: float | None = None
    finished_at: float | None = None
    preview: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    # What the person told the model when they answered `e` (no, and say why).
    feedback: str = ""
    # Names the record's widgets; differs from tool_use_id only if a server repeats an id.
    key: str = ""
    # The engine's measure of the run (`tool_finished`), which the UI clock only approximates.
    duration: float | None = None

    def __post_init__(self) -> None:
        self.key = self.key or self.tool_use_id

    @property
    def finished(self) -> bool:
        return self.status.finished

    def elapsed(self, now: float) -> float:
        """Running time (or waiting time, before it started); the engine's measure once finished."""
        if self.duration is not None:
            return self.duration
        start = self.started_at if self.started_at is not None else self.queued_at
        end = self.finished_at if self.finished_at is not None else now
        return max(0.0, end - start)


_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def dom_id(prefix: str, tool_use_id: str) -> str:
    """A widget id for a tool_use id (Textual ids allow letters, digits, `_` and `-`)."""
    return f"{prefix}-{_ID_SAFE.sub('_', tool_use_id)}"


def display_summary(summary: str, input: dict[str, Any], cwd: Path) -> str:
    """The tool's one-line summary, with a file path shown relative to the project."""
    path = input.get("file_path") or input.get("notebook_path")
    if isinstance(path, str) and path:
        return shown_path(path, cwd)
    return summary.replace(f"{cwd}{os.sep}", "")


def format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def format_tokens(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.2f}M"


@dataclass
class CompactionStatus:
    """A compaction being written: what the status line above the input shows."""

    trigger: str
    started_at: float
    output_tokens: int = 0

    def describe(self, now: float) -> str:
        seconds = int(max(0.0, now - self.started_at))
        return f"Compacting conversation… ({seconds}s · ↓{format_tokens(self.output_tokens)} tokens)"
