"""The transcript: user prompts, streamed answers, tool calls, notices.

A scroll container with `layout: stream`, anchored to the bottom until the
person scrolls up.  It only ever appends.  Old entries are pruned from the DOM
by height (the engine keeps the whole history; `/transcript` and `/export`
show all of it), so a long session costs no more to lay out than a short one.
"""

from __future__ import annotations

import asyncio

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
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


class Transcript(VerticalScroll, can_focus=True):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._prune_pending = False
        self.pruned = 0
        # Entries still being written (a streaming answer) are never pruned.
        self.protected: set[Widget] = set()

    def compose(self) -> ComposeResult:
        yield Static("", id="pruned-note", markup=False)

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
        """Jump to the end and stay there (a new prompt was sent)."""
        self.anchor()

    async def clear_entries(self) -> None:
        note = self.query_one("#pruned-note")
        await self.remove_children([c for c in self.children if c is not note])
        self.pruned = 0
        note.display = False

    def _show_pruned_note(self) -> None:
        note = self.query_one("#pruned-note", Static)
        note.update(
            f"⋯ {self.pruned} earlier entries are not shown here — /transcript shows the whole conversation"
        )
        note.display = True

    async def _prune(self) -> None:
        self._prune_pending = False
        height = self.virtual_size.height
        count = len(self.children) - 1
        if height <= PRUNE_HIGH and count <= MAX_ENTRIES:
            return
        note = self.query_one("#pruned-note", Static)
        doomed: list[Widget] = []
        removed = 0
        entries = [c for c in self.children if c is not note]
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
