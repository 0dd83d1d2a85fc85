"""The timeline pane: one row per model request and one per tool_use.

Rows are keyed by the tool_use id and redrawn in place.  Each row ends in a
small bar on its turn's time axis (from the request to the last thing the
turn did): the turn row shows when the model was streaming, a tool row when
the tool waited (·) and ran (█).  Tools that start while the model is still
streaming, or run side by side, line up visibly.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widget import Widget

from ..safe_text import spell_hidden
from ..state import ToolRecord, ToolStatus, TurnRecord, dom_id, format_seconds

BAR_WIDTH = 10
MAX_ROWS = 200
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


class TurnRow(Widget):
    def __init__(self, turn: TurnRecord, timeline: Timeline) -> None:
        super().__init__(classes="turn-row")
        self.turn = turn
        self._timeline = timeline

    @property
    def active(self) -> bool:
        return self.turn.closed_at is None

    def render(self) -> Content:
        turn, timeline = self.turn, self._timeline
        now = timeline.clock()
        start = turn.started_at
        end = turn.axis_end(now, timeline.records)
        stream_end = turn.stream_end_at if turn.stream_end_at is not None else (turn.closed_at or now)
        bar = _bar(start, end, [(start, stream_end, "━", "$text-primary")])
        label = f"model · turn {turn.number}"
        width = max(self.size.width, 24)
        pad = width - len(label) - 2 - (BAR_WIDTH + 2) - 7
        return Content.assemble(
            ("◆ ", "$text-primary"),
            (label, "$text-primary bold"),
            " " * max(pad, 1),
            bar,
            (f"{format_seconds(end - start):>7}", "$text-muted"),
        )


class ToolRow(Widget):
    def __init__(self, record: ToolRecord, timeline: Timeline) -> None:
        super().__init__(id=dom_id("timeline", record.key), classes="tool-row")
        self.record = record
        self._timeline = timeline

    @property
    def active(self) -> bool:
        return not self.record.finished

    def render(self) -> Content:
        record, timeline = self.record, self._timeline
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
        width = max(self.size.width, 30)
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


class Timeline(VerticalScroll):
    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.records: dict[str, ToolRecord] = {}
        self._rows: dict[str, ToolRow] = {}
        self._turn_rows: list[TurnRow] = []
        # A new turn brings the view back to the newest rows, wherever it was scrolled.
        self._back_to_newest = False

    def on_mount(self) -> None:
        self.border_title = "timeline"

    def add_turn(self, turn: TurnRecord) -> None:
        row = TurnRow(turn, self)
        self._turn_rows.append(row)
        self._back_to_newest = True
        self._append(row)

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

    def add_tool(self, record: ToolRecord) -> None:
        self.records[record.tool_use_id] = record
        row = ToolRow(record, self)
        self._rows[record.tool_use_id] = row
        self._append(row)

    def _append(self, row: Widget) -> None:
        self.mount(row)
        self._trim()

    @property
    def latest_turn(self) -> TurnRecord | None:
        return self._turn_rows[-1].turn if self._turn_rows else None

    def row(self, tool_use_id: str) -> ToolRow | None:
        return self._rows.get(tool_use_id)

    def update_tool(self, tool_use_id: str) -> None:
        row = self._rows.get(tool_use_id)
        if row is not None:
            row.refresh()

    def turn_closed(self, turn: TurnRecord) -> None:
        """Draw a turn's final span and its tools on its final axis: the tick redraws only
        what is still moving, so a turn that closes between two ticks would keep the
        duration of the last one."""
        for row in self._turn_rows[-3:]:
            if row.turn is turn:
                row.refresh()
        for row in self._rows.values():
            if row.record.turn is turn:
                row.refresh()

    def tick(self) -> bool:
        """Redraw what is still moving; False when nothing is."""
        moving = False
        for row in self._turn_rows[-3:]:
            if row.active:
                row.refresh()
                moving = True
        for row in self._rows.values():
            if row.active:
                row.refresh()
                moving = True
        if moving:
            # Finished rows of a live turn rescale with its axis.
            for row in self._rows.values():
                if not row.active and row.record.turn is not None and row.record.turn.closed_at is None:
                    row.refresh()
        return moving

    def clear(self) -> None:
        self.remove_children()
        self.records.clear()
        self._rows.clear()
        self._turn_rows.clear()

    def _trim(self) -> None:
        children = list(self.children)
        if len(children) <= MAX_ROWS:
            return
        doomed = children[: len(children) - MAX_ROWS + MAX_ROWS // 4]
        for widget in doomed:
            if isinstance(widget, ToolRow):
                self._rows.pop(widget.record.tool_use_id, None)
                self.records.pop(widget.record.tool_use_id, None)
            elif isinstance(widget, TurnRow) and widget in self._turn_rows:
                self._turn_rows.remove(widget)
        self.remove_children(doomed)
