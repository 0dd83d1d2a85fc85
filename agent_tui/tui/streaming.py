"""Streaming one run of assistant text into the transcript.

The run (one text content block) is cut into segments at paragraph
boundaries (`segments.py`).  The segment being written lives in an
`AssistantText` (Textual's Markdown) fed by `Markdown.get_stream()` from a
worker, which coalesces whatever arrives while the widget is busy and is
stopped in a `finally`.  A segment the stream has moved past is frozen into
one `FrozenMarkdown` widget; segments that arrive whole in one batch (a fast
server) go straight to frozen widgets; the last segment is frozen when the
next prompt starts.  So the widget count of an answer, and the work per
frame, stay bounded however long the answer or the session is.
"""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import Markdown
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from .segments import SegmentSplitter
from .widgets.markdown_lite import FrozenMarkdown
from .widgets.transcript import AssistantText, Transcript


async def _pump(widget: AssistantText, chunks: asyncio.Queue[str | None]) -> None:
    stream = Markdown.get_stream(widget)
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
        self.parts: list[str] = []

    async def stop(self) -> None:
        self.chunks.put_nowait(None)
        try:
            await self.worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass  # reported by the app's worker handler


class TextRun:
    def __init__(self, app: App[object], transcript: Transcript, index: int) -> None:
        self.index = index
        self._app = app
        self._transcript = transcript
        self._splitter = SegmentSplitter()
        self._live: _LiveSegment | None = None
        self._started = False

    async def write(self, text: str) -> None:
        pieces = self._splitter.split(text)
        if len(pieces) > 1:
            done = "".join(self._live.parts) if self._live is not None else ""
            await self._freeze([done + pieces[0], *pieces[1:-1]])
        tail = pieces[-1]
        if tail:
            if self._live is None:
                self._live = await self._start_live()
            self._live.parts.append(tail)
            self._live.chunks.put_nowait(tail)

    async def finish(self) -> AssistantText | None:
        """End the run once the live segment has written its last line; that widget."""
        live, self._live = self._live, None
        if live is None:
            return None
        await live.stop()
        self._transcript.protected.discard(live.widget)
        return live.widget


    def _classes(self) -> str:
        first = not self._started
        self._started = True
        return "assistant -first" if first else "assistant"

    async def _start_live(self) -> _LiveSegment:
        widget = AssistantText(classes=self._classes())
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        self._transcript.protected.add(widget)
        await self._transcript.add(widget)
        worker = self._app.run_worker(_pump(widget, chunks), group="text", exit_on_error=False)
        return _LiveSegment(widget, worker, chunks)

    async def _freeze(self, texts: list[str]) -> None:
        live, self._live = self._live, None
        if live is not None:
            await live.stop()
        classes = live.widget.classes if live is not None else None
        widgets = []
        for n, text in enumerate(t for t in texts if t.strip()):
            cls = " ".join(classes) if n == 0 and classes is not None else self._classes()
            widgets.append(FrozenMarkdown(text, classes=cls))
        if live is not None:
            await self._transcript.add(*widgets, before=live.widget)
            self._transcript.protected.discard(live.widget)
            await live.widget.remove()
        elif widgets:
            await self._transcript.add(*widgets)


async def freeze(transcript: Transcript, widgets: list[AssistantText]) -> None:
    """Swap finished answers for single-widget copies (a long session keeps few widgets)."""
    for widget in widgets:
        if widget.is_attached and widget.source.strip():
            await transcript.add(FrozenMarkdown(widget.source, classes=" ".join(widget.classes)), before=widget)
            await widget.remove()
