"""A loopback server that speaks the Anthropic Messages API over real HTTP/1.1.

Tests drive the real SDK against it; nothing in the SDK's HTTP layer is mocked.

    with LoopbackServer() as srv:
        srv.push(reply(text("Hello"), tool_use("Read", {"file_path": "a.py"})))
        model = AnthropicModel("claude-sonnet-4-6", base_url=srv.url, api_key="test")
        ...
        srv.requests[0].body["messages"]

Serving rules
-------------
* ``POST /v1/messages`` answers with the next scripted `Response`: the queue
  filled by ``srv.push(...)`` (FIFO, one response per request) or, when
  ``srv.handler`` is set, ``handler(request_body, index)`` for every request
  (the queue is then not used).  When the script has run out the server
  answers **500** with an ``api_error`` body whose message says so: tests must
  script every request they cause.
* A request with ``"stream": true`` gets the SSE stream; otherwise `reply`
  responses are sent as one JSON message.  Stream-only shapes (`sse_error`,
  `drop`, `raw`, `hang`) are streamed whatever the request asked for.
* ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": chars/4}`` and
  consumes nothing from the script; it is recorded in ``srv.count_requests``.
* Vertex AI's ``POST /v1/projects/P/locations/R/publishers/anthropic/models/M:streamRawPredict``
  is served as ``/v1/messages`` (the body gets ``model`` M; the request records the Vertex path).
* ``GET /v1/models`` lists ``srv.models`` (empty by default).
* Any other path: 404 with the API's JSON error body.
* ``message_start`` usage ``input_tokens`` is a chars/4 estimate of the request
  (system + messages + tools) unless ``usage`` gives it.
* Connections are kept alive (HTTP/1.1, chunked SSE bodies).
* ``srv.disconnects`` holds the `time.monotonic()` at which a client closed a
  connection while a response was still being sent.

Standalone (end-to-end tests, benchmarks)::

    python -m tests.loopback --port 0 --script FILE.json [--cycle] [--log FILE.jsonl]
    python -m tests.loopback --port 0 --handler MODULE:NAME

prints the URL on the first line of stdout and serves until killed.  The
script is a JSON list of specs, see `from_spec`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import secrets
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Block",
    "LoopbackServer",
    "Received",
    "Response",
    "drop",
    "from_spec",
    "gated",
    "hang",
    "raw",
    "redacted_thinking",
    "reply",
    "sse_error",
    "status",
    "text",
    "thinking",
    "tool_use",
]

DEFAULT_MODEL = "claude-sonnet-4-6"
_WRITE_BATCH = 256 * 1024


def _dumps(value: Any) -> str:
    # The API sends compact JSON with raw UTF-8.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _sse(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def _estimate_tokens(body: dict[str, Any]) -> int:
    parts = {k: body.get(k) for k in ("system", "messages", "tools") if body.get(k)}
    return max(1, len(_dumps(parts)) // 4)


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": "req_011" + secrets.token_hex(10),
    }


# ---------------------------------------------------------------- blocks


@dataclass(slots=True)
class Block:
    """One content block of a scripted reply (build with `text`, `tool_use`, `thinking`)."""

    type: str  # "text" | "tool_use" | "thinking" | "redacted_thinking"
    text: str = ""
    name: str = ""
    input: dict[str, Any] | str = field(default_factory=dict)
    id: str = ""
    signature: str = ""
    delay_before: float = 0.0


def text(s: str, *, delay_before: float = 0.0) -> Block:
    return Block("text", text=s, delay_before=delay_before)


def tool_use(
    name: str, input: dict[str, Any] | str, id: str | None = None, *, delay_before: float = 0.0
) -> Block:
    """A tool_use block.  `input` as a str is sent verbatim as the partial JSON
    (so it can be invalid JSON); as a dict it is serialized."""
    return Block(
        "tool_use",
        name=name,
        input=input,
        id=id or "toolu_01" + secrets.token_hex(11),
        delay_before=delay_before,
    )


def thinking(text: str, signature: str, *, delay_before: float = 0.0) -> Block:
    return Block("thinking", text=text, signature=signature, delay_before=delay_before)


def redacted_thinking(data: str) -> Block:
    """An encrypted thinking block: it arrives whole in content_block_start."""
    return Block("redacted_thinking", text=data)


# ---------------------------------------------------------------- responses


@dataclass
class Response:
    """One scripted HTTP response.

    A stream is ``start`` (the message of ``message_start``, rendered at serve
    time so ``input_tokens`` can be estimated from the request; None for raw
    streams) followed by ``events``: ``(delay_before, encoded SSE event)``.
    ``end`` says how the stream finishes: "end" (terminating chunk; the
    connection stays open), "drop" (socket closed without the terminating
    chunk) or "hang" (wait until the client disconnects).
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # a plain (non-SSE) body, e.g. an error
    start: dict[str, Any] | None = None
    events: list[tuple[float, bytes]] = field(default_factory=list)
    end: str = "end"
    message: dict[str, Any] | None = None  # the whole message, for non-streaming requests
    # Segment i (and all after it) waits until the test sets gates[i].
    gates: dict[int, threading.Event] = field(default_factory=dict)
    _segments: list[tuple[float, bytes]] | None = field(default=None, repr=False)

    @property
    def is_stream(self) -> bool:
        return self.body is None

    def event_count(self) -> int:
        return (1 if self.start is not None else 0) + len(self.events)

    def segments(self) -> list[tuple[float, bytes]]:
        """``events`` as HTTP chunks: consecutive events with no delay between
        them are joined into one chunk (computed once and cached)."""
        if self._segments is None:
            out: list[tuple[float, bytes]] = []
            pending: list[bytes] = []
            pending_delay = 0.0
            for delay, data in self.events:
                if delay > 0 and pending:
                    out.append((pending_delay, _chunk(b"".join(pending))))
                    pending = []
                if not pending:
                    pending_delay = delay
                pending.append(data)
            if pending:
                out.append((pending_delay, _chunk(b"".join(pending))))
            self._segments = out
        return self._segments

    def start_bytes(self, request: dict[str, Any]) -> bytes:
        assert self.start is not None
        return _sse("message_start", _dumps({"type": "message_start", "message": self._fill(self.start, request)}))

    def json_body(self, request: dict[str, Any]) -> bytes:
        if self.body is not None:
            return self.body
        assert self.message is not None
        return _dumps(self._fill(self.message, request)).encode()

    @staticmethod
    def _fill(message: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        if message["usage"].get("input_tokens") is not None:
            return message
        out = dict(message)
        out["usage"] = dict(message["usage"], input_tokens=_estimate_tokens(request))
        return out


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""


def _chunks(s: str, size: int) -> list[str]:
    size = max(1, size)
    return [s[i : i + size] for i in range(0, len(s), size)]


_TEXT_DELTA = '{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}'
_THINKING_DELTA = '{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}'
_JSON_DELTA = '{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}'


def reply(
    *blocks: Block | str,
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
    chunk: int = 8,
    delay: float = 0.0,
    model: str = DEFAULT_MODEL,
    ping_every: int | None = None,
) -> Response:
    """A complete streamed answer, event for event as the API sends it.

    Blocks may be plain strings (text).  ``stop_reason`` defaults to
    "tool_use" when a tool_use block is present, else "end_turn".  ``usage``
    gives the final usage (any of input_tokens, output_tokens,
    cache_read_input_tokens, cache_creation_input_tokens); output_tokens
    defaults to a chars/4 estimate, input_tokens to an estimate of the request.
    ``delay`` seconds pass between events; a block's ``delay_before`` is
    added before its ``content_block_start``.  ``ping_every=N`` adds a ping
    after every N body events (one ping always follows message_start).
    """
    blocks_ = [text(b) if isinstance(b, str) else b for b in blocks]
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.type == "tool_use" for b in blocks_) else "end_turn"
    usage = dict(usage or {})
    out_chars = 0
    content: list[dict[str, Any]] = []
    body: list[tuple[float, str, str]] = []  # (extra delay, event name, data)

    for index, b in enumerate(blocks_):
        if b.type == "text":
            start_block: dict[str, Any] = {"type": "text", "text": ""}
            body.append((b.delay_before, "content_block_start", _dumps(
                {"type": "content_block_start", "index": index, "content_block": start_block})))
            for piece in _chunks(b.text, chunk):
                body.append((0.0, "content_block_delta", _TEXT_DELTA % (index, _dumps(piece))))
            content.append({"type": "text", "text": b.text})
            out_chars += len(b.text)
        elif b.type == "thinking":
            start_block = {"type": "thinking", "thinking": "", "signature": ""}
            body.append((b.delay_before, "content_block_start", _dumps(
                {"type": "content_block_start", "index": index, "content_block": start_block})))
            for piece in _chunks(b.text, chunk):
                body.append((0.0, "content_block_delta", _THINKING_DELTA % (index, _dumps(piece))))
            body.append((0.0, "content_block_delta", _dumps({
                "type": "content_block_delta", "index": index,
                "delta": {"type": "signature_delta", "signature": b.signature}})))
            content.append({"type": "thinking", "thinking": b.text, "signature": b.signature})
            out_chars += len(b.text)
        elif b.type == "redacted_thinking":
            start_block = {"type": "redacted_thinking", "data": b.text}
            body.append((b.delay_before, "content_block_start", _dumps(
                {"type": "content_block_start", "index": index, "content_block": start_block})))
            content.append(dict(start_block))
        elif b.type == "tool_use":
            raw_input = b.input if isinstance(b.input, str) else _dumps(b.input)
            start_block = {"type": "tool_use", "id": b.id, "name": b.name, "input": {}}
            body.append((b.delay_before, "content_block_start", _dumps(
                {"type": "content_block_start", "index": index, "content_block": start_block})))
            if raw_input:
                # The API often opens with an empty fragment.
                for piece in ["", *_chunks(raw_input, chunk)]:
                    body.append((0.0, "content_block_delta", _JSON_DELTA % (index, _dumps(piece))))
            parsed: Any
            if isinstance(b.input, dict):
                parsed = b.input
            else:
                try:
                    parsed = json.loads(b.input) if b.input.strip() else {}
                except (ValueError, RecursionError):
                    parsed = {}
            content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": parsed})
            out_chars += len(raw_input) + len(b.name)
        else:
            raise ValueError(f"unknown block type {b.type!r}")
        body.append((0.0, "content_block_stop", _dumps({"type": "content_block_stop", "index": index})))

    output_tokens = usage.get("output_tokens", max(1, out_chars // 4))
    start_usage = {
        "input_tokens": usage.get("input_tokens"),
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
        "output_tokens": 1,
    }
    # message_delta usage is cumulative: output_tokens, plus whatever else the script set.
    delta_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    delta_usage["output_tokens"] = output_tokens
    body.append((0.0, "message_delta", _dumps({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": delta_usage,
    })))
    body.append((0.0, "message_stop", '{"type":"message_stop"}'))

    message_id = "msg_01" + secrets.token_hex(11)
    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[tuple[float, bytes]] = [(delay, _sse("ping", '{"type":"ping"}'))]
    for n, (extra, name, data) in enumerate(body, 1):
        events.append((delay + extra, _sse(name, data)))
        if ping_every and n % ping_every == 0:
            events.append((delay, _sse("ping", '{"type":"ping"}')))
    message = dict(start, content=content, stop_reason=stop_reason,
                   usage=dict(start_usage, output_tokens=output_tokens))
    resp = Response(
        headers={"content-type": "text/event-stream; charset=utf-8"},
        start=start, events=events, message=message,
    )
    resp.segments()  # precompute the payload now, not while serving
    return resp


def status(code: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """An HTTP error with the API's JSON error body (e.g. ``headers={"retry-after": "7"}``)."""
    return Response(
        status=code,
        headers={"content-type": "application/json", **(headers or {})},
        body=_dumps(_error_body(error_type, message)).encode(),
    )


def _truncated(of: Response | None, after: int) -> Response:
    base = of if of is not None else reply(
        text("This answer is cut off before it is finished, mid-sentence, because the"))
    if not base.is_stream:
        raise ValueError("`of` must be a streamed response")
    keep_start = base.start is not None and after >= 1
    n_events = max(0, after - (1 if base.start is not None else 0))
    return Response(
        headers={"content-type": "text/event-stream; charset=utf-8"},
        start=base.start if keep_start else None,
        events=list(base.events[:n_events]),
    )


def sse_error(error_type: str, message: str, after: int = 3, *, of: Response | None = None) -> Response:
    """HTTP 200, the first `after` events of `of` (default: a short text reply;
    message_start and pings count), then ``event: error``, then the body ends."""
    resp = _truncated(of, after)
    resp.events.append((0.0, _sse("error", _dumps(_error_body(error_type, message)))))
    resp.segments()
    return resp


def drop(after: int = 3, *, of: Response | None = None) -> Response:
    """HTTP 200, the first `after` events of `of`, then the socket is closed
    abruptly (no terminating chunk)."""
    resp = _truncated(of, after)
    resp.end = "drop"
    resp.segments()
    return resp


def hang(after: int = 2, *, of: Response | None = None) -> Response:
    """HTTP 200, the first `after` events (default: message_start and a ping),
    then nothing until the client disconnects."""
    resp = _truncated(of, after)
    resp.end = "hang"
    resp.segments()
    return resp


def gated(of: Response, at: int = 0) -> tuple[Response, threading.Event]:
    """`of`, holding its `at`-th segment (0: everything after message_start; a
    block's ``delay_before`` starts a new segment) and the rest until the returned
    event is set: the test decides when the stream goes on, whatever the load."""
    gate = of.gates.setdefault(at, threading.Event())
    return of, gate


def raw(events: Iterable[tuple[str, str]], *, delay: float = 0.0, end: str = "end") -> Response:
    """Exactly these ``(event name, data string)`` SSE events, nothing added:
    padded JSON, unknown event types, pings anywhere.  A ``None`` name sends a
    data-only event."""
    out = []
    for name, data in events:
        lines = "".join(f"data: {line}\n" for line in data.split("\n"))
        frame = (f"event: {name}\n" if name is not None else "") + lines + "\n"
        out.append((delay, frame.encode()))
    resp = Response(headers={"content-type": "text/event-stream; charset=utf-8"}, events=out, end=end)
    resp.segments()
    return resp


def from_spec(spec: dict[str, Any]) -> Response:
    """A response from a JSON spec (standalone scripts).  Kinds:

    {"kind": "reply", "blocks": [{"text": "hi", "delay_before": 0},
                                 {"tool_use": {"name": "Read", "input": {...}, "id": "toolu_1", "delay_before": 0}},
                                 {"thinking": {"text": "...", "signature": "..."}}],
     "chunk": 8, "delay": 0.01, "stop_reason": null, "usage": {...}, "model": "...", "ping_every": null}
    {"kind": "status", "code": 529, "error_type": "overloaded_error", "message": "...", "headers": {...}}
    {"kind": "sse_error", "error_type": "...", "message": "...", "after": 3}
    {"kind": "drop", "after": 3}
    {"kind": "hang", "after": 2}
    {"kind": "raw", "events": [["ping", "{\\"type\\":\\"ping\\"}"], ...], "delay": 0}
    """
    kind = spec.get("kind", "reply")
    if kind == "reply":
        blocks: list[Block] = []
        for b in spec.get("blocks", []):
            if "text" in b:
                blocks.append(text(b["text"], delay_before=b.get("delay_before", 0.0)))
            elif "tool_use" in b:
                t = b["tool_use"]
                blocks.append(tool_use(t["name"], t.get("input", {}), t.get("id"),
                                       delay_before=t.get("delay_before", 0.0)))
            elif "thinking" in b:
                t = b["thinking"]
                blocks.append(thinking(t["text"], t.get("signature", ""), delay_before=t.get("delay_before", 0.0)))
            else:
                raise ValueError(f"unknown block spec {b!r}")
        return reply(
            *blocks,
            stop_reason=spec.get("stop_reason"),
            usage=spec.get("usage"),
            chunk=spec.get("chunk", 8),
            delay=spec.get("delay", 0.0),
            model=spec.get("model", DEFAULT_MODEL),
            ping_every=spec.get("ping_every"),
        )
    if kind == "status":
        return status(spec["code"], spec["error_type"], spec["message"], spec.get("headers"))
    if kind == "sse_error":
        return sse_error(spec["error_type"], spec["message"], spec.get("after", 3))
    if kind == "drop":
        return drop(spec.get("after", 3))
    if kind == "hang":
        return hang(spec.get("after", 2))
    if kind == "raw":
        return raw([tuple(e) for e in spec["events"]], delay=spec.get("delay", 0.0), end=spec.get("end", "end"))
    raise ValueError(f"unknown response kind {kind!r}")


# ---------------------------------------------------------------- server


@dataclass(slots=True)
class Received:
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    time: float  # time.monotonic() when the request was complete (read, not yet parsed)
    path: str = "/v1/messages"
    started: float = 0.0  # time.monotonic() when its first bytes arrived
    raw: bytes = b""  # the body as sent


Handler = Callable[[dict[str, Any], int], Response]

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            408: "Request Timeout", 413: "Payload Too Large", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout", 529: "Overloaded"}


_VERTEX_ROUTE = re.compile(r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<model>[^/:]+):streamRawPredict")


class _ClientGone(Exception):
    pass


class LoopbackServer:
    """The server, on its own event loop in a background thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.url = ""
        self.handler: Handler | None = None
        self.requests: list[Received] = []
        self.count_requests: list[Received] = []
        self.disconnects: list[float] = []
        self.errors: list[str] = []  # unscripted requests, handler failures, bad requests
        self.connections = 0  # TCP connections accepted (keep-alive reuses one)
        self.models: list[str] = []  # what GET /v1/models lists
        self._queue: deque[Response] = deque()
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[asyncio.Task[None]] = set()
        self._served = 0
        self._started = 0.0  # when the request being answered began to arrive
        self.on_request: Callable[[Received], None] | None = None
        # time.monotonic() as each streamed answer's last byte was written, in order.
        self.answered: list[float] = []

    # -- scripting

    def push(self, *responses: Response) -> None:
        """Queue responses, consumed one per /v1/messages request, in order."""
        self._queue.extend(responses)

    @property
    def pending(self) -> int:
        """Scripted responses not yet consumed."""
        return len(self._queue)

    def wait_requests(self, count: int = 1, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_disconnect(self, count: int = 1, timeout: float = 2.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.disconnects) >= count, timeout)

    # -- lifecycle

    def start(self) -> LoopbackServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._connection, self.host, self.port, limit=1 << 20)
                )
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self.port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://{self.host}:{self.port}"
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="loopback-api", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            fut.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._conns)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        self.connections += 1
        buf = bytearray()
        try:
            while True:
                request = await self._read_request(reader, buf)
                if request is None:
                    return
                method, path, headers, body, self._started = request
                keep = await self._respond(reader, writer, buf, method, path, headers, body)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, OSError, asyncio.IncompleteReadError, _ClientGone):
            return
        except asyncio.CancelledError:
            # Server shutdown.  Not re-raised: asyncio's stream callback would log
            # a cancelled connection task as an error.
            writer.transport.abort()
        finally:
            self._conns.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _read_request(
        self, reader: asyncio.StreamReader, buf: bytearray
    ) -> tuple[str, str, dict[str, str], bytes, float] | None:
        started = time.monotonic() if buf else None
        while b"\r\n\r\n" not in buf:
            data = await reader.read(65536)
            if not data:
                return None
            buf += data
            started = started or time.monotonic()
        head_end = buf.index(b"\r\n\r\n")
        head = bytes(buf[:head_end]).decode("latin-1")
        del buf[: head_end + 4]
        lines = head.split("\r\n")
        method, path, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                while b"\r\n" not in buf:
                    data = await reader.read(65536)
                    if not data:
                        return None
                    buf += data
                line_end = buf.index(b"\r\n")
                size = int(bytes(buf[:line_end]).split(b";")[0], 16)
                del buf[: line_end + 2]
                while len(buf) < size + 2:
                    data = await reader.read(65536)
                    if not data:
                        return None
                    buf += data
                body += buf[:size]
                del buf[: size + 2]
                if size == 0:
                    break
            return method, path, headers, bytes(body), started
        length = int(headers.get("content-length", "0") or 0)
        if len(buf) < length:
            # The rest in one read (a multi-megabyte body is not grown 64 KB at a time).
            try:
                buf += await reader.readexactly(length - len(buf))
            except asyncio.IncompleteReadError:
                return None
        body = bytes(buf[:length])
        del buf[:length]
        return method, path, headers, body, started

    def _head(self, code: int, headers: dict[str, str], extra: dict[str, str]) -> bytes:
        self._served += 1
        lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}"]
        merged = {
            "date": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
            "request-id": "req_011" + secrets.token_hex(10),
            "server": "loopback-messages-api",
            "connection": "keep-alive",
            **{k.lower(): v for k, v in headers.items()},
            **extra,
        }
        lines += [f"{k}: {v}" for k, v in merged.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_json(self, writer: asyncio.StreamWriter, code: int, payload: bytes,
                         headers: dict[str, str] | None = None) -> None:
        writer.write(self._head(code, {"content-type": "application/json", **(headers or {})},
                                {"content-length": str(len(payload))}) + payload)
        await writer.drain()

    def _record(self, target: list[Any], item: Any) -> None:
        with self._cond:
            target.append(item)
            self._cond.notify_all()

    async def _respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, buf: bytearray,
                       method: str, path: str, headers: dict[str, str], raw_body: bytes) -> bool:
        arrived = time.monotonic()
        route = path.split("?", 1)[0]
        if method == "GET" and route == "/v1/models":
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
                    for m in self.models]
            await self._send_json(writer, 200, _dumps({
                "data": data, "has_more": False,
                "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None,
            }).encode())
            return True
        vertex = _VERTEX_ROUTE.fullmatch(route)
        if vertex is not None:
            # Vertex AI names the model in the path; the rest is the Messages API.
            path, route = route, "/v1/messages"
        if method != "POST" or route not in ("/v1/messages", "/v1/messages/count_tokens"):
            await self._send_json(writer, 404, _dumps(_error_body(
                "not_found_error", f"Not found: {method} {route}")).encode())
            return True
        try:
            body = json.loads(raw_body or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._record(self.errors, f"bad request body: {exc}")
            await self._send_json(writer, 400, _dumps(_error_body(
                "invalid_request_error", f"Request body is not valid JSON: {exc}")).encode())
            return True
        if vertex is not None:
            body.setdefault("model", vertex["model"])
        received = Received(body, headers, arrived, path if vertex is not None else route, self._started, raw_body)
        if route == "/v1/messages/count_tokens":
            self._record(self.count_requests, received)
            await self._send_json(writer, 200, _dumps({"input_tokens": _estimate_tokens(body)}).encode())
            return True

        index = len(self.requests)
        self._record(self.requests, received)
        if self.on_request is not None:
            self.on_request(received)
        try:
            if self.handler is not None:
                resp = self.handler(body, index)
            elif self._queue:
                resp = self._queue.popleft()
            else:
                resp = None
        except Exception as exc:  # noqa: BLE001 - surfaced as a 500 and in srv.errors
            msg = f"loopback: the handler failed on request #{index}: {type(exc).__name__}: {exc}"
            self._record(self.errors, msg)
            await self._send_json(writer, 500, _dumps(_error_body("api_error", msg)).encode())
            return True
        if resp is None:
            msg = f"loopback: the script ran out (request #{index} has no scripted response)"
            self._record(self.errors, msg)
            await self._send_json(writer, 500, _dumps(_error_body("api_error", msg)).encode())
            return True

        if not resp.is_stream:
            await self._send_json(writer, resp.status, resp.json_body(body), resp.headers)
            return True
        if not body.get("stream") and resp.message is not None:
            await self._send_json(writer, resp.status, resp.json_body(body), {"content-type": "application/json"})
            return True
        return await self._stream(reader, writer, buf, resp, body)

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, buf: bytearray,
                      resp: Response, body: dict[str, Any]) -> bool:
        gone = asyncio.Event()
        state = {"streaming": True, "recorded": False}

        def client_gone() -> None:
            if state["streaming"] and not state["recorded"]:
                state["recorded"] = True
                self._record(self.disconnects, time.monotonic())
            gone.set()

        async def watch() -> None:
            # The SDK never pipelines, so the only thing to read mid-response is EOF.
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    buf.extend(data)
            except (ConnectionError, OSError):
                pass
            client_gone()

        watcher = asyncio.create_task(watch())

        async def send(data: bytes) -> None:
            view = memoryview(data)
            for i in range(0, len(view), _WRITE_BATCH):
                if gone.is_set():
                    raise _ClientGone
                writer.write(view[i : i + _WRITE_BATCH])
                try:
                    await writer.drain()
                except (ConnectionError, OSError):
                    client_gone()
                    raise _ClientGone from None

        async def pause(seconds: float) -> None:
            if seconds > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gone.wait(), seconds)
            if gone.is_set():
                raise _ClientGone

        try:
            head = self._head(resp.status, resp.headers, {
                "cache-control": "no-cache",
                "transfer-encoding": "chunked",
            })
            first = resp.start_bytes(body) if resp.start is not None else b""
            await send(head + _chunk(first))
            for i, (delay, data) in enumerate(resp.segments()):
                if i in resp.gates:
                    await asyncio.to_thread(resp.gates[i].wait)
                await pause(delay)
                await send(data)
            if resp.end == "drop":
                state["streaming"] = False
                writer.transport.abort()
                return False
            if resp.end == "hang":
                await gone.wait()
                return False
            await send(b"0\r\n\r\n")
            state["streaming"] = False
            self._record(self.answered, time.monotonic())
            return True
        except _ClientGone:
            return False
        finally:
            state["streaming"] = False
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


# ---------------------------------------------------------------- standalone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.loopback", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file: a list of response specs (see from_spec)")
    parser.add_argument("--cycle", action="store_true", help="repeat the script instead of running out")
    parser.add_argument("--log", help="append each received /v1/messages request as a JSON line")
    parser.add_argument("--handler", metavar="MODULE:NAME",
                        help="answer every request with NAME(body, index) -> Response from MODULE (instead of a script)")
    args = parser.parse_args(argv)

    specs: list[dict[str, Any]] = []
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            specs = json.load(f)
    responses = [from_spec(s) for s in specs]

    srv = LoopbackServer(args.host, args.port)
    if args.handler:
        import importlib

        module, _, name = args.handler.partition(":")
        srv.handler = getattr(importlib.import_module(module), name)
    elif args.cycle and responses:
        srv.handler = lambda _body, i: responses[i % len(responses)]
    else:
        srv.push(*responses)
    if args.log:
        log_path = args.log

        def log(r: Received) -> None:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(_dumps({"time": r.time, "path": r.path, "headers": r.headers, "body": r.body}) + "\n")

        srv.on_request = log

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with srv:
        print(srv.url, flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
