"""The transcript: user prompts, streamed answers, tool calls, notices.

A scroll container with `layout: stream`, anchored to the bottom until the
person scrolls up; output that lands below the view meanwhile raises a "new
output below" line at the bottom edge, until End (or scrolling) gets there.
Output of a slash command is brought into view.  It only ever appends.  Old entries are pruned from the DOM
by height (the engine keeps the whole history; `/transcript` and `/export`
show all of it), so a long session costs no more to lay out than a short one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from ..warmup import warm_up

# Virtual height (lines) at which pruning starts, and the height it prunes down to;
# likewise for the number of entries.
PRUNE_HIGH = 3000
PRUNE_LOW = 1500
MAX_ENTRIES = 240
KEEP_ENTRIES = 160
# The latest entries always stay, whatever their height.
KEEP_LAST = 6


class UserPrompt(Static):
    def __init__(self, text: str, attachments: list[str] | None = None) -> None:
        parts: list[Content | tuple[str, str] | str] = [("› ", "$text-primary bold"), Content(text)]
        for line in attachments or []:
            parts += ["\n", (f"  ⎿ {line}", "$text-muted")]
        super().__init__(Content.assemble(*parts), classes="user-prompt", markup=False)


class Notice(Static):
    """A line from the engine: retry, fallback, compaction, error, interruption."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(text, classes=f"notice -{kind}", markup=False)


class NewOutputMarker(Static):
    """Docked at the transcript's bottom edge while output it has not shown waits below."""

    def on_click(self, event: events.Click) -> None:
        event.stop()
        transcript = self.parent
        if isinstance(transcript, Transcript):
            transcript.follow()


class Transcript(VerticalScroll, can_focus=True):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._prune_pending = False
        self.pruned = 0
        # Entries still being written (a streaming answer) are never pruned.
        self.protected: set[Widget] = set()

    def compose(self) -> ComposeResult:
        yield Static("", id="pruned-note", markup=False)
        yield NewOutputMarker(
            Content.assemble(("↓ new output below", "bold"), (" · End", "$text-muted")), id="new-output", markup=False
        )

    def on_mount(self) -> None:
        self.anchor()
        # Once the first frame is out, what the first answer needs loads in the background.
        self.set_timer(0.3, warm_up)

    def add(self, *widgets: Widget, before: Widget | None = None) -> AwaitMount:
        """Append entries (await the result to know they are mounted)."""
        mounted = self.mount_all(widgets, before=before)
        if not self._prune_pending:
            self._prune_pending = True
            self.call_after_refresh(self._prune)
        return mounted

    @property
    def line_budget(self) -> int:
        """Lines an answer arriving in one go may fill: more would be pruned at once."""
        return PRUNE_LOW

    @property
    def text_width(self) -> int:
        """Columns an entry's text wraps at (80 before the first layout)."""
        return self.scrollable_content_region.width or 80

    def count_unshown(self, entries: int) -> None:
        """Entries that were never mounted because pruning would have dropped them at once."""
        if entries:
            self.pruned += entries
            self._show_pruned_note()

    def follow(self) -> None:
        """Jump to the end and stay there (a new prompt was sent, End was pressed)."""
        self.anchor()
        self._new_output(False)

    @property
    def following(self) -> bool:
        """Kept at the end as output arrives (False once the person has scrolled up)."""
        return self.is_anchored and not self._anchor_released

    @property
    def entries(self) -> list[Widget]:
        """What was added, oldest first (not the pruned-entries note or the marker)."""
        return [c for c in self.children if c.id not in ("pruned-note", "new-output")]

    @property
    def new_output_shown(self) -> bool:
        return self.query_one("#new-output").display

    def release_anchor(self) -> None:
        # A scroll (PageUp, the wheel) with nothing above to read leaves it following.
        if self.max_scroll_y > 0:
            super().release_anchor()

    def _new_output(self, shown: bool) -> None:
        marker = self.query_one("#new-output")
        if marker.display != shown:
            marker.display = shown

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        # Grown while the person reads further up, with the new part out of view.
        if new.height > old.height and not self.following and self.scroll_y < self.max_scroll_y:
            self._new_output(True)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new >= self.max_scroll_y and self.new_output_shown:
            self._new_output(False)

    async def show_output_of(self, work: Awaitable[None]) -> None:
        """Run `work` (a slash command) and bring what it adds into view: at the end, or, when
        it is taller than the view, from its first line."""
        before = self.entries
        last = before[-1] if before else None
        self.follow()
        await work
        self.call_after_refresh(self._reveal_after, last)

    def _reveal_after(self, last: Widget | None) -> None:
        entries = self.entries
        start = entries.index(last) + 1 if last in entries else 0
        if start >= len(entries) or not self.following:
            return
        first = entries[start]
        if self.virtual_size.height - first.virtual_region_with_margin.y > self.scrollable_content_region.height:
            self.release_anchor()
            self.scroll_to_widget(first, top=True, animate=False, immediate=True)

    async def clear_entries(self) -> None:
        note = self.query_one("#pruned-note")
        await self.remove_children(self.entries)
        self.pruned = 0
        note.display = False
        self._new_output(False)

    def _show_pruned_note(self) -> None:
        note = self.query_one("#pruned-note", Static)
        note.update(
            f"⋯ {self.pruned} earlier entries are not shown here — /transcript shows the whole conversation"
        )
        note.display = True

    async def _prune(self) -> None:
        self._prune_pending = False
        height = self.virtual_size.height
        entries = self.entries
        count = len(entries)
        if height <= PRUNE_HIGH and count <= MAX_ENTRIES:
            return
        doomed: list[Widget] = []
        removed = 0
        for child in entries[:-KEEP_LAST]:
            child_height = child.outer_size.height
            # Stop at anything still being written or not laid out yet (its height is unknown).
            if child in self.protected or child_height == 0:
                break
            if height - removed <= PRUNE_LOW and count - len(doomed) <= KEEP_ENTRIES:
                break
            removed += child_height
            doomed.append(child)
        if not doomed:
            return
        # Read before the removal shifts everything up: a person reading older entries stays put.
        following = self.is_anchored and self.is_vertical_scroll_end
        self.pruned += len(doomed)
        self._show_pruned_note()
        await self.remove_children(doomed)
        await asyncio.sleep(0)
        if following:
            self.scroll_end(animate=False, immediate=True)
