"""Cutting a streamed Markdown answer into segments of bounded size.

The segment being written is rendered again, whole, on every frame that
shows new text, so that work grows with its length.  The answer is instead
written into a chain of widgets, each cut at a paragraph boundary: a line
that follows a blank line, starts in column 0 and is outside any code fence.
Cut there, Markdown renders the same.
"""

from __future__ import annotations

SEGMENT_CHARS = 1000
_FENCES = ("```", "~~~")
_HEAD = 8  # characters of a line needed to recognise a fence


class SegmentSplitter:
    def __init__(self, limit: int = SEGMENT_CHARS) -> None:
        self.limit = limit
        self._size = 0  # characters in the current segment
        self._fence: str | None = None
        self._head = ""  # the start of the current line
        self._has_text = False  # the current line is not blank
        self._prev_blank = False
        self._at_line_start = True

    def split(self, text: str, limit: int | None = None) -> list[str]:
        """`text` in pieces; each piece but the last ends a segment.  `limit`, for this text
        only, overrides the segment size (0: cut at every paragraph boundary in it)."""
        if limit is None:
            limit = self.limit
        pieces: list[str] = []
        start = i = 0
        n = len(text)
        while i < n:
            if self._at_line_start:
                self._at_line_start = False
                if (
                    self._prev_blank
                    and self._fence is None
                    and self._size + (i - start) >= limit
                    and text[i] not in " \t\n"
                ):
                    pieces.append(text[start:i])
                    start = i
                    self._size = 0
            newline = text.find("\n", i)
            end = n if newline < 0 else newline
            if len(self._head) < _HEAD:
                self._head += text[i : min(end, i + _HEAD)]
            if not self._has_text and not text[i:end].isspace() and end > i:
                self._has_text = True
            if newline < 0:
                break
            self._end_line()
            i = newline + 1
            self._at_line_start = True
        self._size += n - start
        pieces.append(text[start:])
        return pieces

    def _end_line(self) -> None:
        head = self._head.lstrip()
        if self._fence is not None:
            if head.startswith(self._fence):
                self._fence = None
        else:
            for marker in _FENCES:
                if head.startswith(marker):
                    self._fence = marker
        self._prev_blank = not self._has_text
        self._head = ""
        self._has_text = False
