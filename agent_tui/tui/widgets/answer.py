"""The part of an answer still streaming.

Drawn by the same renderer as finished text (`markdown_lite`), as one widget:
each batch of text appends to its source, and the source is rendered again
when Textual next draws the widget, at most `REDRAWS_PER_SECOND` times a
second however fast the text comes.  A new paragraph mounts nothing and
composes nothing; only this widget's lines change.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from time import monotonic

from textual.widget import Widget

from .markdown_lite import MarkdownVisual, Selectable, render_markdown

# Text a fast model streams shows within a frame or two, without a redraw per delta.
REDRAWS_PER_SECOND = 30


class AssistantText(Selectable, Widget):
    """One run of assistant text while it streams; `source` is the text so far."""

    DEFAULT_CSS = "AssistantText { height: auto; }"

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.source = ""
        self._visual: MarkdownVisual | None = None
        self._redrawn_at = float("-inf")
        self._redraw_due = False

    def append(self, text: str) -> None:
        if not text:
            return
        self.source += text
        self._visual = None
        if self._redraw_due:
            return  # the redraw already asked for shows this text too
        wait = self._redrawn_at + 1 / REDRAWS_PER_SECOND - monotonic()
        if wait <= 0:
            self._redraw()
        else:
            self._redraw_due = True
            self.set_timer(wait, self.flush)

    def flush(self) -> None:
        """Draw the text appended since the last redraw, if any is waiting (its time has
        come, or the run is over)."""
        if self._redraw_due:
            self._redraw()

    def _redraw(self) -> None:
        self._redraw_due = False
        self._redrawn_at = monotonic()
        self.refresh(layout=True)

    def remake(self) -> Callable[[], Widget]:
        """Once the run is over, the transcript mounts it again as the finished text it is."""
        from .markdown_lite import FrozenMarkdown

        return partial(FrozenMarkdown, self.source, classes=" ".join(self.classes), visual=self._visual)

    def render(self) -> MarkdownVisual:
        if self._visual is None:
            self._visual = render_markdown(self.source)
        return self._visual
