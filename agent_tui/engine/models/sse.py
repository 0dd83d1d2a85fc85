"""A server-sent-events decoder for the Messages API stream (no dependencies)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

# How long the end of a body may take after the response's last event (a server that keeps
# the stream open is given up on then, the connection closed instead of reused).
DRAIN_SECONDS = 0.5


async def iter_sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str | None, str]]:
    """Server-sent events as `(event name, data)` from a byte stream.

    Frames end at a blank line; `data:` lines are joined with newlines; comment
    lines and unknown fields are skipped.  Work is linear: only the unfinished
    tail of the buffer is carried between chunks.
    """
    buf = b""
    async for chunk in chunks:
        buf = buf + chunk if buf else chunk
        if b"\r" in buf:
            held = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:  # a CRLF may be split across chunks: keep it for the next one
                buf = buf[:-1] + b"\r"
        if b"\n\n" not in buf:
            continue
        *frames, buf = buf.split(b"\n\n")
        for frame in frames:
            parsed = _parse_frame(frame)
            if parsed is not None:
                yield parsed
    if buf.strip():
        parsed = _parse_frame(buf.rstrip(b"\r\n"))
        if parsed is not None:
            yield parsed


def _parse_frame(frame: bytes) -> tuple[str | None, str] | None:
    name: str | None = None
    data: list[bytes] = []
    for line in frame.split(b"\n"):
        if line.startswith(b"data:"):
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif line.startswith(b"event:"):
            name = line[6:].strip().decode()
    if name is None and not data:
        return None
    return name, b"\n".join(data).decode("utf-8")


async def drain(events: AsyncIterator[Any], seconds: float = DRAIN_SECONDS) -> None:
    """Read what follows a response's last event (normally only the end of the body), so
    the connection goes back to the pool; after `seconds` stop waiting."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            async for _ in events:
                pass
