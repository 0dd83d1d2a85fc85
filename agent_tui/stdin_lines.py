"""stdin's lines for the front ends that speak a line protocol on it (the Agent SDK transport,
the ACP agent): read without blocking the event loop, one line at a time, bounded in size."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

# One line (one JSON message) at the most; a longer one is dropped, not buffered without end.
LINE_LIMIT = 64 * 1024 * 1024


class LineTooLong(ValueError):
    """A line over `LINE_LIMIT`: its rest was skipped, the next `readline` goes on after it."""


class StdinLines:
    """The lines of `stream` (stdin): a pipe is read on the loop directly, anything else (a file,
    a terminal) in a thread."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._reader: asyncio.StreamReader | None = None

    async def open(self) -> StdinLines:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        with contextlib.suppress(ValueError, OSError):
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self._stream)
            self._reader = reader
        return self

    async def readline(self) -> bytes | None:
        """The next line with its newline; None at the end of input; `LineTooLong` for a line
        over the limit (asyncio's reader skips the rest of it)."""
        if self._reader is None:
            data = await asyncio.to_thread(self._stream.buffer.readline)
        else:
            try:
                data = await self._reader.readline()
            except ValueError as exc:
                raise LineTooLong(str(exc)) from None
        return data or None
