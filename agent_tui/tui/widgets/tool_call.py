"""A tool call in the transcript: one summary line that expands to its output or diff.

The body is built only when first expanded, so a long session holds one small
widget per tool call rather than every output it ever produced.  File changes
(a `diff` in the result data) open expanded: they are what a person reviews.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from ..safe_text import reveal_hidden
from ..state import ToolRecord, ToolStatus, dom_id, format_seconds
from .diff import DiffView, diff_stats

MAX_OUTPUT_LINES = 200
PROGRESS_LINES = 3
# A line that says what went wrong: a test run's tally, a compiler's or a shell's error.
_FAILURE_LINE = re.compile(r"\b(failed|failures?|errors?|fatal|exception|traceback|denied|not found|no such)\b",
                           re.IGNORECASE)


def output_text(record: ToolRecord) -> str:
    """The richest text the result offers for a person (the model got its own)."""
    data = record.data
    if "todos" in data:
        return ""  # the list shows in the transcript already; the tool's text is for the model
    if isinstance(data.get("stdout"), str):
        return data["stdout"]
    if isinstance(data.get("excerpt"), str):
        return data["excerpt"]
    files = data.get("files")
    if isinstance(files, list) and files:
        return "\n".join(str(f) for f in files)
    return record.preview


def output_gist(output: str, *, failed: bool) -> str:
    """The line of a command's output that says how it went: the last one, or when it failed
    the last one naming the failure (pytest's "4 failed, 1 passed", not its first `.FFFF`),
    without the rules drawn around it."""
    lines = [line.strip().strip("=-*_~#").strip() for line in output.splitlines()]
    lines = [line for line in lines if line]
    if failed:
        for line in reversed(lines):
            if _FAILURE_LINE.search(line):
                return line
    return lines[-1] if lines else ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def result_hint(record: ToolRecord) -> str:
    data = record.data
    if isinstance(data.get("diff"), str):
        added, removed = diff_stats(data["diff"])
        return f"+{added} −{removed}"
    if "exit_code" in data:
        output = str(data.get("stdout", ""))
        hint = f"exit {data['exit_code']} · {_plural(len(output.splitlines()), 'line')}"
        gist = output_gist(output, failed=record.is_error or bool(data["exit_code"]))
        return f"{hint} · {gist[:120]}" if gist else hint
    if "lines_read" in data:
        return _plural(data["lines_read"], "line")
    if isinstance(data.get("media"), str):
        return data["media"]  # an image or PDF: "image PNG 1024×768 · 234 KB"
    if isinstance(data.get("matches"), int):
        return f"{data['matches']} match{'es' * (data['matches'] != 1)}"
    if isinstance(data.get("count"), int):
        return f"{data['count']} file{'s' * (data['count'] != 1)}"
    return ""


class ToolSummary(Static):
    """The clickable one-line summary."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # As for `ToolCall`: a line of fixed height, whose new size asks for no second layout.
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    class Clicked(Message):
        """The summary line was clicked: its tool call expands or collapses."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Clicked())


class ToolCall(Vertical, can_focus=True):
    """Focused (Ctrl+O gives the newest its focus), ↑ / ↓ walk to the other tool rows, Enter or
    Ctrl+O opens or closes the focused one, Esc or typing goes back to the input."""

    BINDINGS = [
        Binding("up", "walk(-1)", "Earlier tool", show=False, id="tool.previous"),
        Binding("down", "walk(1)", "Later tool", show=False, id="tool.next"),
        Binding("enter,ctrl+o", "toggle_output", "Open / close", show=False, id="tool.toggle"),
        Binding("escape", "leave", "Back to the input", show=False, id="tool.leave"),
    ]

    # Expanded: the output or diff shows under the summary line (class `-expanded`).
    expanded: reactive[bool] = reactive(False, init=False)

    class Walk(Message):
        """↑ / ↓ on a focused row: the app moves the focus to the tool row `step` rows away."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def action_walk(self, step: int) -> None:
        self.post_message(self.Walk(step))

    def action_toggle_output(self) -> None:
        self.toggle()
        self.scroll_visible(animate=False)

    def action_leave(self) -> None:
        self.app.action_focus_input()

    def on_key(self, event: events.Key) -> None:
        # Typing goes to the input, as if the row had never taken the focus.
        if event.is_printable and event.character:
            event.stop()
            self.app.action_focus_input(event.character)

    def __init__(self, record: ToolRecord, *, expanded: bool | None = None) -> None:
        super().__init__(id=dom_id("tool", record.key), classes="tool-call")
        self.record = record
        self._body: Static | None = None
        self._progress: list[str] = []
        # Made again by the transcript (`remake`): as it was left, expanded or not.
        self._remade_expanded = expanded
        # Composed and mounted: until then the record's changes wait for `on_mount`.
        self._drawn = False

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # A row gets its size from the layout pass that placed it.  Textual asks for another layout of
        # the whole screen when a widget's virtual size changes; a row is no scrolling container, so
        # that pass would change nothing, and each row of a burst would lay the screen out twice
        # (docs/architecture.md §8).
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def remake(self) -> Callable[[], ToolCall]:
        return partial(ToolCall, self.record, expanded=self.expanded)

    def on_mount(self) -> None:
        self._drawn = True
        # Mounted after its record changed (made from data, or again): drawn as the record is now.
        if self._remade_expanded is not None:
            self._show_record_state()
            self.expanded = self._remade_expanded
        elif self.record.status is not ToolStatus.QUEUED or self.record.feedback:
            self.refresh_record()

    def on_tool_summary_clicked(self, event: ToolSummary.Clicked) -> None:
        event.stop()
        self.toggle()

    def compose(self) -> ComposeResult:
        # The progress and feedback lines are mounted when first needed: most rows never have
        # them, and every mounted widget is laid out again at each frame of a tool burst.
        yield ToolSummary(self._summary(), markup=False, classes="tool-summary")

    def _line(self, kind: str) -> Static:
        """The row's progress or feedback line (`kind`), mounted the first time it is asked for."""
        lines = self.query(f".tool-{kind}").results(Static)
        line = next(lines, None)
        if line is None:
            line = Static("", markup=False, classes=f"tool-{kind}")
            # In the order summary, progress, feedback, body.
            progress = next(self.query(".tool-progress").results(Static), None) if kind == "feedback" else None
            self.mount(line, after=progress or self.query_one(ToolSummary))
        return line

    def _hide_progress(self) -> None:
        progress = next(self.query(".tool-progress").results(Static), None)
        if progress is not None:
            progress.display = False

    @property
    def has_output(self) -> bool:
        return self.record.finished and bool(output_text(self.record) or self.record.data.get("diff"))

    def refresh_record(self) -> None:
        """Redraw from the record after its status changed."""
        if not self._drawn:
            return  # mounted soon (a burst's rows come together): `on_mount` draws the record as it is then
        record = self.record
        self._show_record_state()
        if record.finished:
            self._progress.clear()
            self._hide_progress()
            if isinstance(record.data.get("diff"), str) and record.status is ToolStatus.DONE and not self.expanded:
                self.toggle()
            elif self._body is not None:
                self._fill_body(self._body)

    def _show_record_state(self) -> None:
        record = self.record
        # One style update for the change of status, not one per class.
        self.update_classes({f"-{status}": record.status is status for status in ToolStatus})
        # One line, as wide as the row whatever it says: drawn again without laying out the screen.
        self.query_one(ToolSummary).update(self._summary(), layout=False)
        if record.feedback:
            # The person's own words, shown where they answered, not behind Ctrl+O.
            feedback = self._line("feedback")
            feedback.update(Content.assemble(("  ⎿ you said: ", "$text-muted"), (record.feedback, "$text-warning")))
            feedback.display = True
        if record.finished:
            self._hide_progress()

    def add_progress(self, text: str) -> None:
        self._progress.extend(text.splitlines())
        del self._progress[:-PROGRESS_LINES]
        if not self._drawn:
            return
        progress = self._line("progress")
        progress.update("\n".join(f"  {line}" for line in self._progress))
        progress.display = True

    def toggle(self) -> None:
        if self.has_output or self.expanded:
            self.expanded = not self.expanded

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(expanded, "-expanded")
        if expanded and self._body is None:
            self._body = self._make_body()
            self.mount(self._body)
        elif self._body is not None:
            self._body.display = expanded
        self.query_one(ToolSummary).update(self._summary())

    def _make_body(self) -> Static:
        diff = self.record.data.get("diff")
        if isinstance(diff, str) and diff:
            return DiffView(diff, classes="tool-body tool-diff")
        body = Static("", markup=False, classes="tool-body")
        self._fill_body(body)
        return body

    def _fill_body(self, body: Static) -> None:
        if isinstance(body, DiffView):
            return
        lines = output_text(self.record).rstrip("\n").split("\n")
        text = "\n".join(lines[:MAX_OUTPUT_LINES])
        if len(lines) > MAX_OUTPUT_LINES:
            text += f"\n… {len(lines) - MAX_OUTPUT_LINES} more lines (/transcript shows everything)"
        body.update(text)

    def _summary(self) -> Content:
        record = self.record
        icon, style = record.status.icon
        parts: list[Any] = [(icon, style), " ", (record.name, "bold")]
        if record.summary:
            parts.append(reveal_hidden(f"({record.summary})", "$text-secondary"))
        detail = self._detail()
        if detail:
            parts += ["  ", (f"⎿ {detail}", "$text-muted")]
        if self.has_output:
            parts.append(("  ▾" if self.expanded else "  ▸", "$text-muted"))
        return Content.assemble(*parts)

    def _detail(self) -> str:
        record = self.record
        status = record.status
        if not status.finished:
            return {ToolStatus.QUEUED: "queued", ToolStatus.RUNNING: "running…"}.get(status, "waiting for permission")
        elapsed = format_seconds(record.elapsed(record.finished_at or 0.0))
        if status is ToolStatus.DONE:
            hint = result_hint(record)
            return f"{elapsed} · {hint}" if hint else elapsed
        if status is ToolStatus.REJECTED:
            return "rejected"
        if "exit_code" in record.data:  # a failed command: how it ended, not its first line
            return f"{status} · {elapsed} · {result_hint(record)}"
        first = record.preview.strip().split("\n", 1)[0][:120]
        return f"{status} · {first}" if first else str(status)
