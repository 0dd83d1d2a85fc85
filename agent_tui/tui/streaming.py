"""Streaming one run of assistant text into the transcript.

The run (one text content block) is cut into segments at paragraph
boundaries (`segments.py`).  The segment being written lives in an
`AssistantText`: one widget whose Markdown source grows with each batch and
is rendered again (by `markdown_lite`, as finished text is) at most 30 times
a second.  Once the stream has moved past a segment, that widget keeps what it
shows and a new one takes the next segment, so the text rendered again on
each frame stays short however long the answer is.

A fast server (or a slow frame) delivers a lot of text in one batch.  Such a
batch is cut at every paragraph it completes: the complete paragraphs become
`FrozenMarkdown` widgets (one parse, one widget for up to `FROZEN_CHARS`),
and a new live widget only gets the block still being written.  Only the
newest pieces that fit the transcript's line budget are mounted: the rest are
recorded in the transcript as data, drawn if the person scrolls back to them.
While a resumed session loads, a run is recorded as such pieces only, parsed
when first drawn.  The pieces are mounted one per frame:
after each, the run waits until the screen has been refreshed, so frames keep
flowing while a batch is drawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from functools import partial
from typing import TYPE_CHECKING

from .segments import SegmentSplitter
from .widgets.markdown_lite import FrozenMarkdown

if TYPE_CHECKING:
    from .widgets.answer import AssistantText
    from .widgets.transcript import Transcript

# Text per frozen widget: few widgets to lay out, and one render stays short enough for a frame.
FROZEN_CHARS = 1500
# A batch at least this long is cut at every paragraph boundary (a model types far less per frame).
EAGER_CHARS = 1000
# The longest wait for a frame between two pieces (a suspended app draws none).
FRAME_WAIT = 0.1


# Thresholds put aside while text streams; None when full collections run as usual.
_saved_thresholds: tuple[int, int, int] | None = None


# The run that paused them (a later run takes over the pause).
_paused_by: object = None


def pause_full_collections(run: object) -> None:
    """Python's full collections walk every object (~0.1 s once a long answer is on screen,
    a dropped frame each): while text streams they wait; young collections go on.
    (Textual pauses the collector during smooth scrolling for the same reason.)"""
    global _saved_thresholds, _paused_by
    _paused_by = run
    if _saved_thresholds is None:
        _saved_thresholds = gc.get_threshold()
        young, middle, _ = _saved_thresholds
        gc.set_threshold(young, middle, 1 << 30)


def resume_full_collections(run: object) -> None:
    """Full collections run as usual again, unless another run has paused them since."""
    global _saved_thresholds, _paused_by
    if _saved_thresholds is not None and _paused_by is run:
        gc.set_threshold(*_saved_thresholds)
        _saved_thresholds = _paused_by = None


def estimated_lines(text: str, width: int) -> int:
    """About how many lines `text` takes once wrapped at `width` (no rendering needed)."""
    width = max(width, 20)
    return sum(len(line) // width + 1 for line in text.split("\n"))


def group_segments(texts: list[str], limit: int = FROZEN_CHARS) -> list[str]:
    """Consecutive segments joined into pieces of about `limit` characters (segment boundaries kept)."""
    out: list[str] = []
    for text in texts:
        if not text.strip():
            continue
        if out and len(out[-1]) + len(text) <= limit:
            out[-1] += text
        else:
            out.append(text)
    return out


class TextRun:
    def __init__(self, transcript: Transcript, index: int, tag: object = None) -> None:
        self.index = index
        self._transcript = transcript
        # Tags every entry the run adds (so a discarded attempt can be taken back).
        self._tag = tag
        self._splitter = SegmentSplitter()
        # The text of a run replayed while the transcript loads: recorded whole at its end.
        self._loaded: list[str] = []
        self._live: AssistantText | None = None
        self._started = False

    async def write(self, text: str) -> None:
        if self._transcript.loading:
            self._loaded.append(text)
            return
        pause_full_collections(self)
        pieces = self._splitter.split(text, limit=0 if len(text) >= EAGER_CHARS else None)
        if len(pieces) > 1:
            await self._freeze(pieces[:-1])
        tail = pieces[-1]
        if tail:
            if self._live is None:
                self._live = await self._start_live()
            self._live.append(tail)

    def finish(self) -> None:
        """End the run: the live widget keeps what it shows."""
        if self._loaded:
            self._record_loaded()
            return
        live, self._live = self._live, None
        if live is not None:
            live.flush()
            self._transcript.protected.discard(live)
        # Once the end of the answer is on screen (a full collection may come right after).
        if not self._transcript.call_after_refresh(resume_full_collections, self):
            resume_full_collections(self)

    def _record_loaded(self) -> None:
        pieces = group_segments(self._splitter.split("".join(self._loaded), limit=0))
        self._loaded = []
        self._transcript.add(*(partial(FrozenMarkdown, piece, classes=self._classes()) for piece in pieces),
                             tag=self._tag)

    def _classes(self) -> str:
        first = not self._started
        self._started = True
        return "assistant -first" if first else "assistant"

    async def _start_live(self) -> AssistantText:
        from .widgets.answer import AssistantText

        widget = AssistantText(classes=self._classes())
        self._transcript.protected.add(widget)
        await self._transcript.add(widget, tag=self._tag)
        return widget

    def _unshown(self, pieces: list[str]) -> int:
        """How many of the oldest pieces the transcript's line budget leaves out (never the last)."""
        transcript = self._transcript
        budget, width = transcript.line_budget, transcript.text_width
        lines = 0
        for n in range(len(pieces) - 1, -1, -1):
            lines += estimated_lines(pieces[n], width)
            if lines > budget and n < len(pieces) - 1:
                return n + 1
        return 0

    async def _freeze(self, texts: list[str]) -> None:
        """End the live segment with the complete segments `texts` (the first continues it)."""
        live, self._live = self._live, None
        done = live.source if live is not None else ""
        grouped = group_segments([done + texts[0], *texts[1:]])
        unshown = self._unshown(grouped)
        pieces = grouped[unshown:]
        transcript = self._transcript
        if live is not None:
            transcript.protected.discard(live)
            if (done + texts[0]).strip() and not unshown:
                # The live widget keeps its text and takes the rest of its piece.
                live.append(pieces.pop(0)[len(done) :])
                live.flush()
            else:
                # Its text is among what the line budget leaves out (recorded as data below).
                await transcript.drop(live)
        if unshown:
            transcript.add_unshown(
                [partial(FrozenMarkdown, piece, classes=self._classes()) for piece in grouped[:unshown]], tag=self._tag
            )
        for n, piece in enumerate(pieces):
            if n:
                await self._next_frame()
            widget = FrozenMarkdown(piece, classes=self._classes())
            await transcript.add(widget, tag=self._tag)
        if pieces or live is not None:
            # What follows (the live widget, the next batch) starts in a frame of its own.
            await self._next_frame()

    async def _next_frame(self) -> None:
        """Until the screen has drawn what is mounted so far."""
        drawn = asyncio.Event()
        # Posted to the transcript, not the app: the app's own queue waits for the handler running this.
        if self._transcript.call_after_refresh(drawn.set):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drawn.wait(), FRAME_WAIT)
