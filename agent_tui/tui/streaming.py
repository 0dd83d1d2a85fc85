"""Streaming one run of assistant text into the transcript.

The run (one text content block) is cut into segments at paragraph
boundaries (`segments.py`).  The segment being written lives in an
`AssistantText` (Textual's Markdown) fed by `Markdown.get_stream()` from a
worker, which coalesces whatever arrives while the widget is busy and is
stopped in a `finally`.  Segments the stream has moved past are frozen into
`FrozenMarkdown` widgets (one parse, one widget for up to `FROZEN_CHARS`);
the last segment is frozen when the next prompt starts.  So the widget count
of an answer, and the work per frame, stay bounded however long the answer
or the session is.

A fast server (or a slow frame) delivers a lot of text in one batch.  Such a
batch is cut at every paragraph it completes: the complete paragraphs are
frozen at once, and the live widget only gets the block still being written
(Textual's Markdown mounts a widget per block, and no frame is drawn until a
whole append is mounted).  Only the newest pieces that fit the transcript's
line budget are rendered: the rest would be pruned right after layout, so
they are counted as pruned and never drawn (`/transcript` shows everything).
The pieces are mounted one per frame: after each, the run waits until the
screen has been refreshed, so frames keep flowing while a batch is drawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import TYPE_CHECKING

from textual.app import App
from textual.widget import Widget
from textual.worker import Worker, WorkerCancelled, WorkerFailed

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


async def _pump(widget: AssistantText, chunks: asyncio.Queue[str | None]) -> None:
    stream = widget.get_stream(widget)
    try:
        while (chunk := await chunks.get()) is not None:
            await stream.write(chunk)
    finally:
        await stream.stop()


class _LiveSegment:
    def __init__(self, widget: AssistantText, worker: Worker[None], chunks: asyncio.Queue[str | None]) -> None:
        self.widget = widget
        self.worker = worker
        self.chunks = chunks
        self.text = ""

    def write(self, text: str) -> None:
        # A segment is at most a few thousand characters, so one string is cheaper than a list of deltas.
        self.text += text
        self.chunks.put_nowait(text)

    async def stop(self) -> None:
        self.chunks.put_nowait(None)
        try:
            await self.worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass  # reported by the app's worker handler


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
    def __init__(
        self, app: App[object], transcript: Transcript, index: int, mounted: list[Widget] | None = None
    ) -> None:
        self.index = index
        self._app = app
        self._transcript = transcript
        # Every widget the run mounts is also recorded here (so a discarded attempt can be removed).
        self._mounted = mounted if mounted is not None else []
        self._splitter = SegmentSplitter()
        self._live: _LiveSegment | None = None
        self._started = False

    async def write(self, text: str) -> None:
        pause_full_collections(self)
        pieces = self._splitter.split(text, limit=0 if len(text) >= EAGER_CHARS else None)
        if len(pieces) > 1:
            done = self._live.text if self._live is not None else ""
            await self._freeze([done + pieces[0], *pieces[1:-1]])
        tail = pieces[-1]
        if tail:
            if self._live is None:
                self._live = await self._start_live()
            self._live.write(tail)

    async def finish(self) -> AssistantText | None:
        """End the run once the live segment has written its last line; that widget."""
        live, self._live = self._live, None
        if live is not None:
            await live.stop()
            self._transcript.protected.discard(live.widget)
        # Once the end of the answer is on screen (a full collection may come right after).
        if not self._transcript.call_after_refresh(resume_full_collections, self):
            resume_full_collections(self)
        return live.widget if live is not None else None

    def _classes(self) -> str:
        first = not self._started
        self._started = True
        return "assistant -first" if first else "assistant"

    async def _start_live(self) -> _LiveSegment:
        from .widgets.answer import AssistantText

        widget = AssistantText(classes=self._classes())
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        self._transcript.protected.add(widget)
        self._mounted.append(widget)
        await self._transcript.add(widget)
        worker = self._app.run_worker(_pump(widget, chunks), group="text", exit_on_error=False)
        return _LiveSegment(widget, worker, chunks)

    def _shown(self, pieces: list[str]) -> list[str]:
        """The newest pieces that fit the transcript's line budget (always the last one)."""
        transcript = self._transcript
        budget, width = transcript.line_budget, transcript.text_width
        lines = 0
        for n in range(len(pieces) - 1, -1, -1):
            lines += estimated_lines(pieces[n], width)
            if lines > budget and n < len(pieces) - 1:
                transcript.count_unshown(n + 1)
                return pieces[n + 1 :]
        return pieces

    async def _freeze(self, texts: list[str]) -> None:
        live, self._live = self._live, None
        if live is not None:
            await live.stop()
        pieces = self._shown(group_segments(texts))
        transcript = self._transcript
        for n, piece in enumerate(pieces):
            if n:
                await self._next_frame()
            if n == 0 and live is not None:
                # The first piece takes the live widget's place (and its classes).
                widget = FrozenMarkdown(piece, classes=" ".join(live.widget.classes))
                self._mounted.append(widget)
                await transcript.add(widget, before=live.widget)
                transcript.protected.discard(live.widget)
                await live.widget.remove()
                live = None
            else:
                widget = FrozenMarkdown(piece, classes=self._classes())
                self._mounted.append(widget)
                await transcript.add(widget)
        if live is not None:
            transcript.protected.discard(live.widget)
            await live.widget.remove()
        if pieces:
            # What follows (the live widget, the next batch) starts in a frame of its own.
            await self._next_frame()

    async def _next_frame(self) -> None:
        """Until the screen has drawn what is mounted so far."""
        drawn = asyncio.Event()
        # Posted to the transcript, not the app: the app's own queue waits for the handler running this.
        if self._transcript.call_after_refresh(drawn.set):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drawn.wait(), FRAME_WAIT)


async def freeze(transcript: Transcript, widgets: list[AssistantText]) -> None:
    """Swap finished answers for single-widget copies (a long session keeps few widgets)."""
    for widget in widgets:
        if widget.is_attached and widget.source.strip():
            await transcript.add(FrozenMarkdown(widget.source, classes=" ".join(widget.classes)), before=widget)
            await widget.remove()
