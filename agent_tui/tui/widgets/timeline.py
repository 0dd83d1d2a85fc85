"""The timeline pane: one row per model request and one per tool_use.

The rows are data (the turn and tool records) drawn one line each with
Textual's line API: only the lines in view are rendered, and a row is redrawn
in place when its record changes.  Each row ends in a
small bar on its turn's time axis (from the request to the last thing the
turn did): the turn row shows when the model was streaming, a tool row when
the tool waited (·) and ran (█).  Tools that start while the model is still
streaming, or run side by side, line up visibly.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget

from ..safe_text import spell_hidden
from ..state import BURST_PERIOD, ToolRecord, ToolStatus, TurnRecord, burst_delay, format_seconds

BAR_WIDTH = 10
SPINNER = "◐◓◑◒"

Clock = Callable[[], float]

def _bar(start: float, end: float, segments: list[tuple[float, float, str, str]]) -> Content:
    """Cells on [start, end]; each segment (from, to, char, style) fills the cells it covers."""
    span = max(end - start, 1e-6)
    cells: list[tuple[str, str]] = [(" ", "")] * BAR_WIDTH
    for seg_from, seg_to, char, style in segments:
        first = int((seg_from - start) / span * BAR_WIDTH)
        last = int((seg_to - start) / span * BAR_WIDTH - 1e-9)
        first = min(max(first, 0), BAR_WIDTH - 1)
        last = min(max(last, first), BAR_WIDTH - 1)
        for i in range(first, last + 1):
            cells[i] = (char, style)
    return Content.assemble(("▕", "$text-muted"), *cells, ("▏", "$text-muted"))


def turn_line(turn: TurnRecord, timeline: Timeline, width: int) -> Content:
    """A model request's row: its streaming span on the turn's axis, and the turn's time."""
    now = timeline.clock()
    start = turn.started_at
    end = turn.axis_end(now, timeline.records)
    stream_end = turn.stream_end_at if turn.stream_end_at is not None else (turn.closed_at or now)
    bar = _bar(start, end, [(start, stream_end, "━", "$text-primary")])
    label = f"model · turn {turn.number}"
    width = max(width, 24)
    pad = width - len(label) - 2 - (BAR_WIDTH + 2) - 7
    return Content.assemble(
        ("◆ ", "$text-primary"),
        (label, "$text-primary bold"),
        " " * max(pad, 1),
        bar,
        (f"{format_seconds(end - start):>7}", "$text-muted"),
    )


def tool_line(record: ToolRecord, timeline: Timeline, width: int) -> Content:
    """A tool_use's row: its wait (·) and run (█) on its turn's axis, and its time."""
    now = timeline.clock()
    icon, icon_style = record.status.icon
    if record.status is ToolStatus.RUNNING:
        icon = SPINNER[int(now * 8) % len(SPINNER)]
    turn = record.turn
    if turn is not None:
        start = turn.started_at
        end = turn.axis_end(now, timeline.records)
    else:
        start, end = record.queued_at, now
    begun = record.started_at if record.started_at is not None else record.finished_at or now
    ended = record.finished_at if record.finished_at is not None else now
    segments = [(record.queued_at, begun, "·", "$text-muted")]
    if record.started_at is not None:
        segments.append((record.started_at, ended, "█", record.status.style))
    bar = _bar(start, end, segments)
    indent = "↳ " if record.parent_tool_use_id else ""
    name = (indent + record.name)[:10]
    width = max(width, 30)
    room = width - 2 - 11 - (BAR_WIDTH + 2) - 7
    summary = spell_hidden(record.summary)
    if len(summary) > room:
        summary = summary[: max(room - 1, 0)] + "…"
    return Content.assemble(
        (icon, icon_style),
        " ",
        (f"{name:<10} ", "bold"),
        (f"{summary:<{max(room, 0)}}", "$text-muted"),
        bar,
        (f"{format_seconds(record.elapsed(now)):>7}", record.status.style),
    )


class TimelineStrip(Widget):
    """The timeline in one line, for terminals too narrow for the pane: the current
    turn and the latest tools, newest last (Ctrl+T opens the full pane)."""

    def __init__(self, timeline: Timeline, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._timeline = timeline

    def render(self) -> Content:
        timeline = self._timeline
        now = timeline.clock()
        turn = timeline.latest_turn
        parts: list[tuple[str, str] | str] = [("timeline", "$text-muted")]
        if turn is not None:
            parts += [("  ◆ ", "$text-primary"), (f"turn {turn.number}", "$text-primary bold")]
        tools = list(timeline.records.values())[-12:]
        cells: list[Content] = []
        for record in tools:
            icon, style = record.status.icon
            if record.status is ToolStatus.RUNNING:
                icon = SPINNER[int(now * 8) % len(SPINNER)]
            cells.append(
                Content.assemble(
                    (icon, style), " ", (record.name, "bold"), " ", (format_seconds(record.elapsed(now)), "$text-muted")
                )
            )
        hint = Content.styled("  ctrl+t", "$text-muted")
        head = Content.assemble(*parts)
        room = self.size.width - head.cell_length - hint.cell_length
        # Newest tools win the room; older ones fold into a count.
        shown: list[Content] = []
        used = 0
        for cell in reversed(cells):
            cost = cell.cell_length + 3
            if used + cost > room - 10:
                break
            shown.insert(0, cell)
            used += cost
        hidden = len(timeline.records) - len(shown)
        body = [Content.styled(f"  +{hidden} earlier", "$text-muted")] if hidden else []
        for cell in shown:
            body += [Content.styled(" · " if body else "  ", "$text-muted"), cell]
        return Content.assemble(head, *body, hint)


def _finished(row: TurnRecord | ToolRecord) -> bool:
    return row.closed_at is not None if isinstance(row, TurnRecord) else row.finished


class Timeline(ScrollView):
    """The rows as data, drawn with Textual's line API: only the lines in view are rendered,
    so a 500-turn session's timeline costs what a short one's does (docs/architecture.md §8)."""

    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.records: dict[str, ToolRecord] = {}
        # One entry per line: a turn's row (a blank line above it), or a tool's.
        self._lines: list[TurnRecord | ToolRecord | None] = []
        self._tool_lines: dict[str, int] = {}
        self._turns: list[TurnRecord] = []
        # Lines whose row still moves (a running turn or tool): redrawn by the tick.
        self._live: dict[int, TurnRecord | ToolRecord] = {}
        # A new turn brings the view back to the newest rows, wherever it was scrolled.
        self._back_to_newest = False
        # While a resumed session is replayed: rows are recorded, and drawn once at the end.
        self.loading = False
        # Rows appended in a burst (tool calls) are taken into the pane's height together (`_grow`).
        self._grown_at = float("-inf")
        self._grow_pending = False

    def on_mount(self) -> None:
        self.border_title = "timeline"

    def prepend(self, older: Timeline) -> None:
        """Put the rows `older` recorded (the start of a resumed session) before these."""
        shift = len(older._lines)
        self._lines[0:0] = older._lines
        self.records = {**older.records, **self.records}
        self._tool_lines = {**older._tool_lines, **{k: n + shift for k, n in self._tool_lines.items()}}
        self._turns[0:0] = older._turns
        self._live = {n + shift: row for n, row in self._live.items()}
        if not self.loading:
            self.virtual_size = Size(0, len(self._lines))
            self.refresh()

    def finish_loading(self) -> None:
        """Draw what was recorded while loading, the newest rows in view."""
        self.loading = False
        self._live = {line: row for line, row in self._live.items() if not _finished(row)}
        self._back_to_newest = True
        self.virtual_size = Size(0, len(self._lines))
        self.refresh()

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def add_turn(self, turn: TurnRecord) -> None:
        self._turns.append(turn)
        self._back_to_newest = True
        self._lines.append(None)
        self._live[len(self._lines)] = turn
        self._append(turn)

    def add_tool(self, record: ToolRecord) -> None:
        self.records[record.tool_use_id] = record
        self._tool_lines[record.tool_use_id] = len(self._lines)
        self._live[len(self._lines)] = record
        self._append(record)

    def _append(self, row: TurnRecord | ToolRecord) -> None:
        self._lines.append(row)
        if self.loading:
            return
        if self._grow_pending:
            return
        # Each new height lays the whole screen out again: a burst's rows are taken in together.
        now = time.monotonic()
        if now - self._grown_at >= BURST_PERIOD:
            self._grow()
        else:
            self._grow_pending = True
            self.set_timer(burst_delay(self._grown_at, now), self._grow)

    def _grow(self) -> None:
        """Take in the rows appended since the last time (a new height lays the screen out again)."""
        self._grow_pending = False
        self._grown_at = time.monotonic()
        if self.virtual_size.height != len(self._lines):
            if not self.display:
                # Hidden (the strip shows instead): a new height would lay the whole screen out again
                # for nothing; it is laid out with this height when shown.
                self.set_reactive(Timeline.virtual_size, Size(0, len(self._lines)))
                return
            self.virtual_size = Size(0, len(self._lines))
            self.refresh()

    def watch_virtual_size(self) -> None:
        self._follow_newest()

    def on_resize(self) -> None:
        self._follow_newest()

    def _follow_newest(self) -> None:
        """Keep the newest rows in view (Textual's anchor) until the person scrolls up, and
        again from the next turn on.  Anchored only once the rows overflow the pane: an
        anchored pane would push rows that fit to its bottom."""
        height = self.scrollable_content_region.height
        if not height:
            return  # hidden: decided when it is shown
        if self.virtual_size.height <= height:
            if self.is_anchored:
                self.anchor(False)
            return
        if not self.is_anchored or self._back_to_newest:
            self.anchor()
        self._back_to_newest = False

    def render_line(self, y: int) -> Strip:
        index = y + self.scroll_offset.y
        width = self.scrollable_content_region.width
        row = self._lines[index] if 0 <= index < len(self._lines) else None
        if row is None:
            return Strip.blank(width, self.rich_style)
        content = turn_line(row, self, width) if isinstance(row, TurnRecord) else tool_line(row, self, width)
        return Visual.to_strips(self, content, width, 1, self.visual_style, pad=True)[0]

    def row_text(self, tool_use_id: str) -> str:
        """What a tool's row says now (as drawn at the pane's width)."""
        record = self.records[tool_use_id]
        return tool_line(record, self, self.scrollable_content_region.width).plain

    @property
    def latest_turn(self) -> TurnRecord | None:
        return self._turns[-1] if self._turns else None

    def update_tool(self, tool_use_id: str) -> None:
        line = self._tool_lines.get(tool_use_id)
        if line is not None and not self.loading:
            self.refresh_line(line)

    def turn_closed(self, turn: TurnRecord) -> None:
        """Draw a turn's final span and its tools on its final axis: the tick redraws only
        what is still moving, so a turn that closes between two ticks would keep the
        duration of the last one."""
        if not self.loading:
            self.refresh()

    def tick(self) -> bool:
        """Redraw what is in view when something still moves; False when nothing does."""
        live = self._live
        for line, row in list(live.items()):
            if _finished(row):
                del live[line]
        if live:
            # Finished rows of a live turn rescale with its axis: the lines in view are redrawn.
            self.refresh()
        return bool(live)

    def clear(self) -> None:
        self.records.clear()
        self._lines.clear()
        self._tool_lines.clear()
        self._turns.clear()
        self._live.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()
