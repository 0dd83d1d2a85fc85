"""The transcript: user prompts, streamed answers, tool calls, notices.

A scroll container with `layout: stream`, anchored to the bottom until the
person scrolls up; output that lands below the view meanwhile raises a "new
output below" line at the bottom edge, until End (or scrolling) gets there.
Output of a slash command is brought into view.

It is a window on the whole session (docs/architecture.md §8): every entry is
kept as data (a way to make its widget), and only a run of entries around the
view is mounted.  Entries that scroll far out of view are unmounted (their
widget says how to make it again: `remake()`), and the ones next to the run are
mounted as the view comes near its edge, so a 500-turn session costs no more to
lay out than a short one and still scrolls back to its first prompt.  Home and
End move the window to the first and the last entries.  While a resumed
session is loaded (`loading`) entries are only recorded; `show_tail()` then
mounts the last screen.  The view stays put when entries above it come or go:
the arrangement that takes them in keeps the entry in view where it was.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from functools import partial
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

from ..state import BURST_PERIOD, burst_delay
from ..warmup import warm_up

# Lines kept mounted above and below the view (the rest is data until the view comes near).
MARGIN = 80
# Lines kept mounted above the view while it follows the end (each mounted entry is laid out again
# at every frame that takes in new output; scrolling up mounts more as the view nears the edge).
FOLLOW_MARGIN = 20
# Lines from an edge of the mounted run at which the entries past it are mounted (well inside MARGIN,
# so what is mounted is not unmounted at once).
NEAR = MARGIN // 2
# Entries mounted at once when the view nears an edge of the mounted run, or jumps to an end.
CHUNK = 12
# Entries mounted when the view jumps to an end (Home, End, a resumed session's last screen): most
# entries are a few lines, so these fill a screen; more come one by one if they do not.
TAIL = 24
# The latest entries always stay mounted while the view follows the end.
KEEP_LAST = 6
# How often `tail_drawn` looks whether the last entry is on screen, and for how long at most.
DRAWN_POLL = 0.005
DRAWN_LIMIT = 3.0

# Makes an entry's widget again (a widget that was unmounted, or one never mounted).
Make = Callable[[], Widget]


class Entry:
    """One thing the transcript shows: its widget while mounted, else how to make it."""

    __slots__ = ("make", "tag", "widget")

    def __init__(self, item: Widget | Make, tag: object = None) -> None:
        self.widget: Widget | None = item if isinstance(item, Widget) else None
        self.make: Make | None = None if isinstance(item, Widget) else item
        # Who added it (a request's attempt), to take its entries back (`discard`).
        self.tag = tag

    def materialize(self) -> Widget:
        if self.widget is None:
            assert self.make is not None
            self.widget, self.make = self.make(), None
        return self.widget

    def release(self) -> Widget | None:
        """Trade the widget for its `remake()`; None when it cannot be made again."""
        widget = self.widget
        remake = getattr(widget, "remake", None)
        if widget is None or remake is None:
            return None
        self.make, self.widget = remake(), None
        return widget


class _Done:
    """What `add` returns when nothing is mounted: awaiting it returns at once."""

    def __await__(self) -> Generator[None, None, None]:
        return iter(())


class UserPrompt(Static):
    def __init__(self, text: str, attachments: list[str] | None = None) -> None:
        parts: list[Content | tuple[str, str] | str] = [("› ", "$text-primary bold"), Content(text)]
        for line in attachments or []:
            parts += ["\n", (f"  ⎿ {line}", "$text-muted")]
        super().__init__(Content.assemble(*parts), classes="user-prompt", markup=False)
        self._made_of = (text, attachments)

    def remake(self) -> Make:
        return partial(UserPrompt, *self._made_of)


class Notice(Static):
    """A line from the engine: retry, fallback, compaction, error, interruption."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(text, classes=f"notice -{kind}", markup=False)
        self._text, self._kind = text, kind

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        if isinstance(content, str):
            self._text = content
        super().update(content, layout=layout)

    def remake(self) -> Make:
        return partial(Notice, self._text, self._kind)


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
        self._entries: list[Entry] = []
        # The mounted entries are `_entries[_lo:_hi]`.
        self._lo = self._hi = 0
        self._trim_pending = False
        # Entries still being written (a streaming answer, a running tool) are never unmounted.
        self.protected: set[Widget] = set()
        # While a resumed session is replayed: entries are recorded, not mounted.
        self.loading = False
        # The widget to keep where it is on screen through the next arrangement, and its offset in the view.
        self._hold: tuple[Widget, int] | None = None
        # Entries of `add_soon` not yet added, and when such a batch was last mounted.
        self._soon: list[tuple[Widget | Make, object]] = []
        self._soon_mounted = float("-inf")

    def compose(self) -> ComposeResult:
        yield NewOutputMarker(
            Content.assemble(("↓ new output below", "bold"), (" · End", "$text-muted")), id="new-output", markup=False
        )

    def on_mount(self) -> None:
        self.anchor()
        # Once the first frame is out, what the first answer needs loads in the background.
        self._warm_up = self.set_timer(0.3, warm_up)

    def hold_warm_up(self) -> None:
        """Leave the warm-up to the app (a resumed session starts it once its last screen is drawn:
        until then its thread would only slow that screen down)."""
        self._warm_up.stop()

    # ------------------------------------------------------------ adding and taking back

    def add(self, *items: Widget | Make, tag: object = None) -> Awaitable[Any]:
        """Append entries (widgets, or ways to make them); await the result to know they are
        mounted.  Mounted only when the window reaches the end and no session is loading."""
        if self._soon:
            self._add_soon_now()
        return self._add(*items, tag=tag)

    def add_soon(self, item: Widget | Make, tag: object = None) -> None:
        """Append an entry that may wait up to `BURST_PERIOD` to be added with the ones that
        follow it (a tool row in a burst of tool calls: one layout for the batch, not one per
        row).  The first of a burst is added at once; anything added with `add` meanwhile comes
        after the ones waiting."""
        now = time.monotonic()
        # (Every mount lays the screen out again, and keys typed meanwhile wait for it.)
        if self.loading or not self._soon and now - self._soon_mounted >= BURST_PERIOD:
            self._soon_mounted = now
            self._add(item, tag=tag)
            return
        if not self._soon:
            self.set_timer(burst_delay(self._soon_mounted, now), self._add_soon_now)
        self._soon.append((item, tag))

    def _add_soon_now(self) -> None:
        soon, self._soon = self._soon, []
        self._soon_mounted = time.monotonic()
        for tag in dict.fromkeys(tag for _, tag in soon):
            self._add(*(item for item, t in soon if t is tag), tag=tag)

    def _add(self, *items: Widget | Make, tag: object = None) -> Awaitable[Any]:
        at_end = self._hi == len(self._entries)
        new = [Entry(item, tag) for item in items]
        self._entries.extend(new)
        if self.loading:
            return _Done()
        if not at_end:
            self._new_output(True)
            return _Done()
        self._hi = len(self._entries)
        self._schedule_trim()
        return self.mount_all([entry.materialize() for entry in new], before="#new-output")

    def add_unshown(self, items: Iterable[Make], tag: object = None) -> None:
        """Append entries too many to draw at once (most of a huge answer arriving in one batch):
        recorded only, and what was mounted before them leaves the screen with them."""
        new = [Entry(item, tag) for item in items]
        if not new:
            return
        if self._soon:
            self._add_soon_now()
        mounted = self._mounted_entries()
        self._entries.extend(new)
        doomed = [w for entry in mounted if (w := entry.release()) is not None]
        # A widget that cannot be made again stays, at the cost of a run that is not contiguous.
        self._lo = self._hi = len(self._entries)
        if doomed:
            self.remove_children(doomed)

    async def discard(self, tag: object) -> None:
        """Take back every entry added with `tag` (a discarded attempt's text)."""
        kept: list[Entry] = []
        doomed: list[Widget] = []
        lo, hi = self._lo, self._hi
        for n, entry in enumerate(self._entries):
            if entry.tag is not tag or tag is None:
                kept.append(entry)
                continue
            lo -= n < self._lo
            hi -= n < self._hi
            if entry.widget is not None:
                self.protected.discard(entry.widget)
                if entry.widget.is_attached:
                    doomed.append(entry.widget)
        self._entries, self._lo, self._hi = kept, lo, hi
        if doomed:
            await self.remove_children(doomed)

    def prepend(self, older: Transcript) -> None:
        """Put the entries `older` recorded (the start of a resumed session) before these."""
        if older._soon:
            older._add_soon_now()
        count = len(older._entries)
        self._entries[0:0] = older._entries
        self._lo += count
        self._hi += count
        self._schedule_trim()

    async def drop(self, widget: Widget) -> None:
        """Take back the entry `widget` shows (the newest entries are looked at first)."""
        for n in range(len(self._entries) - 1, -1, -1):
            if self._entries[n].widget is widget:
                del self._entries[n]
                self._lo -= n < self._lo
                self._hi -= n < self._hi
                break
        self.protected.discard(widget)
        if widget.is_attached:
            await widget.remove()

    async def clear_entries(self) -> None:
        self._soon.clear()
        await self.remove_children(self.entries)
        self._entries.clear()
        self._lo = self._hi = 0
        self.protected.clear()
        self._new_output(False)

    # ------------------------------------------------------------ what is there

    @property
    def entries(self) -> list[Widget]:
        """The mounted entries, oldest first (not the new-output marker)."""
        return [c for c in self.children if c.id != "new-output"]

    @property
    def entry_count(self) -> int:
        """Every entry of the session, mounted or not (and those of `add_soon` still waiting)."""
        return len(self._entries) + len(self._soon)

    @property
    def window(self) -> tuple[int, int]:
        """The mounted run of entries, as (first, past the last)."""
        return self._lo, self._hi

    def entry_widget(self, n: int) -> Widget:
        """Entry `n`'s widget: the mounted one, else one made for the asking (not mounted)."""
        entry = self._entries[n]
        if entry.widget is not None:
            return entry.widget
        assert entry.make is not None
        return entry.make()

    def _mounted_entries(self) -> list[Entry]:
        return [e for e in self._entries[self._lo : self._hi] if e.widget is not None]

    @property
    def text_width(self) -> int:
        """Columns an entry's text wraps at (80 before the first layout)."""
        return self.scrollable_content_region.width or 80

    @property
    def line_budget(self) -> int:
        """Lines an answer arriving in one go may draw at once: the rest is recorded as data."""
        return 2 * MARGIN + max(self.scrollable_content_region.height, 40)

    # ------------------------------------------------------------ following the end

    def follow(self) -> None:
        """Jump to the end and stay there (a new prompt was sent, End was pressed)."""
        if self.loading:
            return  # `show_tail` comes at the end
        if self._hi < len(self._entries):
            self._window_at(max(len(self._entries) - TAIL, 0))
        self.anchor()
        self._new_output(False)

    def show_tail(self, *, earlier: bool = False) -> Awaitable[Any]:
        """Mount the last entries (the last screen of a resumed session) and follow the end; await
        the result to know they are mounted.  `earlier`: entries before them are still to come.

        When entries come before the mounted run (or will), the scrollbar's column is kept from the
        start: otherwise the first layout wraps every entry at the full width, the scrollbar then
        appears, and the next frame wraps them all again one column narrower."""
        self.loading = False
        if earlier or len(self._entries) > TAIL:
            self.styles.scrollbar_gutter = "stable"
        mounted = self._window_at(max(len(self._entries) - TAIL, 0))
        self.anchor()
        self._new_output(False)
        return mounted

    async def tail_drawn(self) -> None:
        """Until the screen has laid out the last entry (the layout that sizes it also draws the
        frame), for at most `DRAWN_LIMIT` seconds.  The loop idles meanwhile: Textual's timers draw
        it.  (A widget's size stays 0 x 0 until a layout places it, even an entry of no lines.)"""
        last = self._entries[-1].widget if self._entries else None
        deadline = time.monotonic() + DRAWN_LIMIT
        while last is not None and last.is_attached and last.display and not last.size.width:
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(DRAWN_POLL)

    def scroll_home(self, **kwargs: Any) -> None:
        """To the first entry of the session (mounted for it if it was not)."""
        if self._lo > 0:
            self._window_at(0)
        super().release_anchor()
        kwargs.setdefault("immediate", True)
        super().scroll_home(**kwargs)

    def _window_at(self, first: int) -> Awaitable[Any]:
        """Mount `TAIL` entries from `first` on (and what the view then comes near) instead of
        the current run; what awaits their mounting."""
        doomed: list[Widget] = []
        for entry in self._mounted_entries():
            widget = entry.release()
            if widget is not None:
                doomed.append(widget)
        if doomed:
            self.remove_children(doomed)
        self._hold = None
        self._lo = self._hi = first
        last = min(first + TAIL, len(self._entries))
        widgets = [entry.materialize() for entry in self._entries[first:last]]
        self._hi = last
        mounted = self.mount_all(widgets, before="#new-output") if widgets else _Done()
        self._schedule_trim()
        return mounted

    @property
    def following(self) -> bool:
        """Kept at the end as output arrives (False once the person has scrolled up)."""
        return self.is_anchored and not self._anchor_released and self._hi == len(self._entries)

    @property
    def new_output_shown(self) -> bool:
        return self.query_one("#new-output").display

    def release_anchor(self) -> None:
        # A scroll (PageUp, the wheel) with nothing above to read leaves it following.
        if self.max_scroll_y > 0 or self._lo > 0:
            super().release_anchor()

    def _new_output(self, shown: bool) -> None:
        marker = self.query_one("#new-output")
        if marker.display != shown:
            marker.display = shown

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        # Grown while the person reads further up, with the new part out of view.
        if new.height > old.height and not self.following and self.scroll_y < self.max_scroll_y:
            if self._hold is None:
                self._new_output(True)
        self._schedule_trim()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new >= self.max_scroll_y and self.new_output_shown and self._hi == len(self._entries):
            self._new_output(False)
        if round(old) != round(new):
            self._schedule_trim()

    def on_resize(self) -> None:
        self._schedule_trim()

    # ------------------------------------------------------------ the mounted run follows the view

    def _schedule_trim(self) -> None:
        if not self._trim_pending:
            self._trim_pending = True
            self.call_after_refresh(self._reconcile)

    def _reconcile(self) -> None:
        """Unmount what is far from the view; mount the entries next to the run when the view
        comes near one of its edges."""
        self._trim_pending = False
        if self.loading or not self.is_attached or self._hold is not None:
            return
        top = self.scroll_y
        height = self.scrollable_content_region.height
        if not height:
            return
        self._unmount_far(top - (FOLLOW_MARGIN if self.following else MARGIN), top + height + MARGIN)
        if self._lo > 0 and (top < NEAR if not self.following else self.virtual_size.height <= height):
            # Following the end, what is above is mounted only until the view is full.
            self._mount_above()
        elif top + height > self.virtual_size.height - NEAR and self._hi < len(self._entries):
            self._mount_below()

    def _unmount_far(self, keep_from: float, keep_to: float) -> None:
        mounted = self._entries[self._lo : self._hi]
        above: list[Entry] = []
        for entry in mounted[:-KEEP_LAST] if self.following else mounted:
            widget = entry.widget
            if widget is None or widget in self.protected or widget.outer_size.height == 0:
                break
            if widget.virtual_region_with_margin.bottom >= keep_from:
                break
            above.append(entry)
        below: list[Entry] = []
        if not self.following:
            for entry in reversed(mounted[len(above) :]):
                widget = entry.widget
                if widget is None or widget in self.protected or widget.outer_size.height == 0:
                    break
                if widget.virtual_region_with_margin.y <= keep_to:
                    break
                below.append(entry)
        if above and not self.following and (stay := mounted[len(above)].widget) is not None:
            # (Following, the anchor keeps the end in view anyway.)
            self._hold_in_place(stay)
        doomed: list[Widget] = []
        for run, side in ((above, "above"), (below, "below")):
            for entry in run:
                widget = entry.release()
                if widget is None:
                    break  # cannot be made again: it and what is beyond it stay
                doomed.append(widget)
                if side == "above":
                    self._lo += 1
                else:
                    self._hi -= 1
        if doomed:
            self.remove_children(doomed)

    def _mount_above(self) -> None:
        first = self._entries[self._lo].widget
        # Following the end (filling a view that is not full), one entry per frame.
        start = max(self._lo - (1 if self.following else CHUNK), 0)
        widgets = [entry.materialize() for entry in self._entries[start : self._lo]]
        self._lo = start
        if first is not None:
            self._hold_in_place(first)
            self.mount_all(widgets, before=first)

    def _mount_below(self) -> None:
        end = min(self._hi + CHUNK, len(self._entries))
        widgets = [entry.materialize() for entry in self._entries[self._hi : end]]
        self._hi = end
        self.mount_all(widgets, before="#new-output")

    def _hold_in_place(self, widget: Widget) -> None:
        """Keep `widget` where it is in the view through the arrangement that follows."""
        if widget.is_attached and widget.outer_size.height:
            self._hold = (widget, widget.virtual_region.y - round(self.scroll_y))

    def _mark_grown_entries(self) -> None:
        """Name to the stream layout every entry whose own children asked for a layout.

        The stream layout re-measures entries from the first one the screen lists as changed and
        keeps the placements of those above it.  The screen lists an entry when the entry itself
        asks for a layout, but not when only something inside it did (a tool row's diff mounted,
        its summary redrawn) and that request reached the screen first in the frame: then, if an
        entry below it changed too (the answer streaming), the row kept its old height (an
        expanded row drawn as its summary line alone).  An entry is known to hold a change when
        the screen has it among the widgets whose layout may have changed."""
        pending = getattr(self.screen, "_layout_widgets", None)
        if not pending or not pending.get(self):
            return  # nothing listed for the transcript: the layout measures every entry anyway
        pending[self].update(widget for widget in pending if widget.parent is self)

    def arrange(self, size: Size, optimal: bool = False) -> Any:
        # The compositor anchors this frame's scroll offset to the end using `container_size`,
        # which it updates only after the layout pass: when the transcript has just shrunk (a
        # permission prompt appeared below it) the frame would show the position `size` rows
        # above the end. `size` is the new scrollable area, so the container's size is known now.
        if not optimal:
            self._container_size = Size(size.width + self.scrollbar_size_vertical,
                                        size.height + self.scrollbar_size_horizontal)
        self._mark_grown_entries()
        arrangement = super().arrange(size, optimal)
        hold = self._hold
        if hold is None:
            return arrangement
        widget, offset = hold
        if not widget.is_attached:
            self._hold = None
            return arrangement
        for placement in arrangement.placements:
            if placement.widget is widget:
                self._hold = None
                # Not through scroll_to: this is the layout pass, and this frame is drawn with it.
                y = max(placement.region.y - offset, 0)
                self.set_reactive(Transcript.scroll_y, y)
                self.set_reactive(Transcript.scroll_target_y, y)
                self.vertical_scrollbar.position = y
                self._schedule_trim()
                break
        return arrangement

    # ------------------------------------------------------------ slash commands' output

    async def show_output_of(self, work: Awaitable[None]) -> None:
        """Run `work` (a slash command) and bring what it adds into view: at the end, or, when
        it is taller than the view, from its first line."""
        self.follow()
        count = len(self._entries)
        await work
        self.call_after_refresh(self._reveal_from, count)

    def _reveal_from(self, count: int) -> None:
        if count >= len(self._entries) or not self.following:
            return
        first = self._entries[count].widget
        if first is None or not first.is_attached:
            return
        if self.virtual_size.height - first.virtual_region_with_margin.y > self.scrollable_content_region.height:
            self.release_anchor()
            # Its first line at the top of the view, wherever the layout that comes next puts it.
            self._hold = (first, first.styles.margin.top)
            self.refresh(layout=True)

