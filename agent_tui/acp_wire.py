"""The ACP agent's wire: newline-delimited JSON-RPC 2.0 on stdin and stdout (docs/architecture.md §8).

A message-level transport for the `agent-client-protocol` package's connection.  It checks every
line before the connection sees it: a line that is not JSON gets a parse error (-32700), one that is
not a JSON-RPC request, notification or response gets an invalid-request error (-32600), each with
a line on stderr, and the agent reads on.  The end of stdin ends the stream.

stdout carries the protocol and nothing else: `protocol_stdout()` keeps the real stdout for the
protocol and points file descriptor 1 (and `sys.stdout`) at stderr, so a stray print, a log or a
child process that inherits it can never corrupt the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from typing import IO, Any

from .stdin_lines import LineTooLong, StdinLines

# One line may carry a whole image (a prompt's image block).
JSONRPC = "2.0"

log = logging.getLogger("agent_tui.acp")


def protocol_stdout() -> IO[bytes]:
    """The process's stdout for the protocol alone; fd 1 and `sys.stdout` now write to stderr."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


class StdioJsonRpc:
    """`acp`'s Transport protocol (send / receive / close) over a byte reader and writer."""

    def __init__(self, reader: StdinLines, out: IO[bytes]) -> None:
        self._reader = reader
        self._out = out
        self._broken = False
        # Requests received and not yet answered (the end of stdin lets them finish).
        self._unanswered: set[Any] = set()
        self._all_answered = asyncio.Event()
        self._all_answered.set()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line; a client that stopped reading is not an error here."""
        if "method" not in message and _key(message.get("id")) in self._unanswered:
            self._unanswered.discard(_key(message.get("id")))
            if not self._unanswered:
                self._all_answered.set()
        if self._broken:
            return
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        try:
            self._out.write(data + b"\n")
        except (BrokenPipeError, ValueError, OSError) as exc:
            self._broken = True
            log.warning("agent-tui: stdout closed, the client no longer reads (%s)", exc)

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at the end of stdin."""
        while True:
            try:
                line = await self._reader.readline()
            except LineTooLong:
                line = b"{line over the size limit}"  # answered as a parse error
            if line is None:
                return None
            if not line.strip():
                continue
            message = await self._checked(line)
            if message is not None:
                if "method" in message and "id" in message:
                    self._unanswered.add(_key(message["id"]))
                    self._all_answered.clear()
                return message

    async def answered(self, timeout: float) -> bool:
        """Wait until every request received has its response (at most `timeout` seconds)."""
        try:
            await asyncio.wait_for(self._all_answered.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._out.flush()

    async def _checked(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            await self._error(None, -32700, "Parse error", f"not JSON: {exc}")
            return None
        problem = _problem(message)
        if problem is None:
            return message
        request_id = message.get("id") if isinstance(message, dict) else None
        await self._error(request_id if _valid_id(request_id) else None, -32600, "Invalid request", problem)
        return None

    async def _error(self, request_id: Any, code: int, text: str, details: str) -> None:
        print(f"agent-tui: acp: {text.lower()} ({details}), answered with an error", file=sys.stderr, flush=True)
        await self.send({"jsonrpc": JSONRPC, "id": request_id,
                         "error": {"code": code, "message": text, "data": {"details": details}}})


def _key(request_id: Any) -> tuple[str, Any]:
    """A request id as a set member: 1 and "1" are different ids."""
    return (type(request_id).__name__, request_id)


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def _problem(message: Any) -> str | None:
    """What makes `message` no JSON-RPC 2.0 message the connection can take; None: nothing."""
    if not isinstance(message, dict):
        return f"a message is a JSON object, not {type(message).__name__} (batches are not supported)"
    if message.get("jsonrpc") != JSONRPC:
        return 'a message needs "jsonrpc": "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return "an id is a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "a method is a string"
        if "params" in message and not isinstance(message["params"], (dict, list)):
            return "params are an object or an array"
        return None
    if "id" not in message:
        return "neither a request (method) nor a response (id)"
    if ("result" in message) == ("error" in message):
        return "a response has a result or an error"
    if "error" in message and not isinstance(message["error"], dict):
        return "an error is an object"
    return None
