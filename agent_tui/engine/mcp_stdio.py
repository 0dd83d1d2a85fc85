"""The stdio transport to an MCP server, reading its answers in linear time and bounded memory.

The SDK's `stdio_client` joins every chunk it reads to what it holds of the current line and
splits the whole again, so one long message costs time quadratic in its size (a 50 MB tool
result: over a minute with the event loop busy).  This transport is the same process handling
(the SDK's spawn, shutdown and kill of the process tree) with a reader that looks for the
newline in each new chunk only, and that stops holding a message past `MAX_MESSAGE_BYTES`: the
rest of it is skipped as it arrives, and the request it answered gets a JSON-RPC error
instead, so one call fails and the server stays usable.  An answer that cannot be parsed
(nested deeper than the decoder goes, say) fails its call the same way, at once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp.types as types
from mcp.client import stdio as sdk_stdio
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

# One JSON-RPC message from a server, at most: a 50 MB text result is about 100 MB on the wire
# (servers send it twice, as content and as structured content).  The tool caps the text further.
MAX_MESSAGE_BYTES = 128 << 20
# JSON-RPC error code for an answer this client could not or would not read (implementation-defined range).
RESPONSE_UNREADABLE = -32001
# The request id is near the start of a response; this much of it is kept to find it.
_HEAD_BYTES = 512
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


@asynccontextmanager
async def stdio_transport(server: StdioServerParameters, errlog: TextIO) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the session's (read, write) streams; stop it on exit."""
    command = await sdk_stdio._get_executable_command(server.command)
    process = await sdk_stdio._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk_stdio.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # No awaits until the task group is entered: a cancellation in between would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        try:
            async with read_writer:
                try:
                    await _read_messages(process.stdout, read_writer)
                finally:
                    await sdk_stdio._drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # closed under the read by our own shutdown, or by the server going away

    async def stdin_writer() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the connection end instead of hanging
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk_stdio._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk_stdio._stop_server_process(process)
        await sdk_stdio._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # Every wait inside is bounded; shielded so a cancelled caller cannot leak the server.
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _read_messages(stdout: Any, out: Any) -> None:
    """Newline-delimited messages from `stdout` to `out` until the end of the stream."""
    parts: list[bytes] = []
    held = 0  # bytes of the current line in `parts`
    skipped = 0  # bytes of the current line not kept (over the limit); its head is parts[0]
    while True:
        try:
            chunk = await stdout.receive()
        except anyio.EndOfStream:
            return
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            piece = chunk[start:newline]
            start = newline + 1
            if skipped:
                message = _too_large(parts[0], skipped + held + len(piece))
            else:
                parts.append(piece)
                message = _parse(b"".join(parts))
            parts, held, skipped = [], 0, 0
            if message is not None:
                await out.send(message)
        rest = chunk[start:]
        if not rest:
            continue
        if skipped:
            skipped += len(rest)
        elif held + len(rest) > MAX_MESSAGE_BYTES:
            skipped = held + len(rest)
            parts = [(b"".join(parts) + rest)[:_HEAD_BYTES]]
            held = 0
        else:
            parts.append(rest)
            held += len(rest)


def _parse(line: bytes) -> SessionMessage | Exception | None:
    if not line.strip():
        return None  # a blank line carries no message
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        # An answer that cannot be read (nested deeper than the decoder goes, not JSON-RPC) fails
        # its call now instead of leaving it to the call timeout; anything else the session reports.
        reason = str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else str(exc)
        return _answer_error(line[:_HEAD_BYTES], f"the answer could not be read: {reason[:300]}") or exc


def _too_large(head: bytes, size: int) -> SessionMessage | Exception:
    """The answer to the request a too-large message was for: an error naming its size."""
    message = (f"the answer was {size:,} bytes, over this client's {MAX_MESSAGE_BYTES:,}-byte limit; "
               "ask for less (a narrower query, a page of results)")
    return _answer_error(head, message) or ValueError(
        f"MCP server sent a message of {size:,} bytes, over the {MAX_MESSAGE_BYTES:,}-byte limit"
    )


def _answer_error(head: bytes, message: str) -> SessionMessage | None:
    """A JSON-RPC error for the request `head` answers, if it is an answer (a request of the
    server's own has a method, and ids of its own) and its id can be found."""
    found = _ID.search(head)
    if found is None or b'"method"' in head:
        return None
    raw = found.group(1)
    request_id: int | str = int(raw) if raw[:1] != b'"' else raw[1:-1].decode("utf-8", "replace")
    data = types.ErrorData(code=RESPONSE_UNREADABLE, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data))
