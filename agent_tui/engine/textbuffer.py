"""Text that arrives in many small pieces (stream deltas), held as a few strings.

A 3.3 MB answer streamed in 8-character deltas is 400,000 small `str`
objects, about 30 MB while they wait to be joined.  `TextBuffer` joins every
`PIECES` appends into one chunk, so it holds about the text's own size, and
the whole text is still built once, in linear time.
"""

from __future__ import annotations


class TextBuffer:
    __slots__ = ("_chunks", "_pieces")

    PIECES = 256

    def __init__(self, text: str = "") -> None:
        self._chunks: list[str] = []
        self._pieces: list[str] = [text] if text else []

    def append(self, text: str) -> None:
        pieces = self._pieces
        pieces.append(text)
        if len(pieces) >= self.PIECES:
            self._chunks.append("".join(pieces))
            pieces.clear()

    def getvalue(self) -> str:
        if self._pieces:
            self._chunks.append("".join(self._pieces))
            self._pieces.clear()
        if len(self._chunks) > 1:
            self._chunks[:] = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""
