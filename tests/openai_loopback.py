"""A loopback server that speaks OpenAI-compatible chat completions over real HTTP/1.1.

The same server machinery as `tests/loopback.py` (scripted per test, FIFO or a handler,
keep-alive, gates, drops, hangs, recorded requests and disconnects), serving:

* ``POST /v1/chat/completions`` with ``"stream": true``: ``data:`` chunks as OpenAI sends
  them (the role first, content and ``reasoning_content`` deltas, ``tool_calls`` deltas by
  index: the id, type and name in the first, then argument fragments), the choice's
  ``finish_reason``, a usage chunk with ``"choices": []`` when the request asked for
  ``stream_options.include_usage``, then ``data: [DONE]``.
* ``GET /v1/models``: ``{"object": "list", "data": [...]}`` of ``srv.models``.
* Anything else: 404 with ``{"error": {...}}``; a script that has run out: 500.

    srv.push(chat("Reading.", call("Read", {"file_path": "a.py"}, id="call_1")))
    model = OpenAIChatModel("gpt-4.1", base_url=srv.url + "/v1", api_key="test")
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from tests.loopback import LoopbackServer, Received, Response, _chunks

__all__ = ["Call", "OpenAILoopback", "call", "chat", "chunk_error", "error", "html_error", "raw_chunks"]

DEFAULT_MODEL = "gpt-4.1"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _data(payload: Any) -> bytes:
    return f"data: {payload if isinstance(payload, str) else _dumps(payload)}\n\n".encode()


def _prompt_tokens(body: dict[str, Any]) -> int:
    parts = {k: body.get(k) for k in ("messages", "tools") if body.get(k)}
    return max(1, len(_dumps(parts)) // 4)


@dataclass(slots=True)
class Call:
    """One function call of a scripted answer; `arguments` as a str is sent verbatim."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = ""
    delay_before: float = 0.0


def call(name: str, arguments: dict[str, Any] | str, id: str | None = None, *, delay_before: float = 0.0) -> Call:
    return Call(name, arguments, id or "call_" + secrets.token_hex(12), delay_before)


class ChatResponse(Response):
    """A streamed chat completion; the usage chunk is rendered at serve time (the prompt is
    counted from the request, and sent only when the request asked for it)."""

    usage: dict[str, Any] | None = None
    completion_id: str = ""
    model: str = DEFAULT_MODEL


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def chat(
    *parts: str | Call,
    reasoning: str = "",
    reasoning_field: str = "reasoning_content",
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    chunk: int = 8,
    delay: float = 0.0,
    model: str = DEFAULT_MODEL,
    end: str = "end",
) -> ChatResponse:
    """A complete streamed answer: `reasoning` first (as `reasoning_field` deltas), then the
    text and calls in order.  `finish_reason` defaults to "tool_calls" when there are calls,
    else "stop".  `usage` may set prompt_tokens, completion_tokens and cached_tokens (the
    prompt defaults to a chars/4 count of the request).  `end="hang"` keeps the connection
    open after ``[DONE]`` until the client goes."""
    completion_id = "chatcmpl-" + secrets.token_hex(12)
    calls = [p for p in parts if isinstance(p, Call)]
    finish = finish_reason or ("tool_calls" if calls else "stop")
    events: list[tuple[float, bytes]] = [(delay, _data(_chunk(completion_id, model, {"role": "assistant",
                                                                                      "content": ""})))]
    out_chars = 0
    for piece in _chunks(reasoning, chunk) if reasoning else []:
        events.append((delay, _data(_chunk(completion_id, model, {reasoning_field: piece}))))
        out_chars += len(piece)
    position = 0
    for part in parts:
        if isinstance(part, str):
            for piece in _chunks(part, chunk):
                events.append((delay, _data(_chunk(completion_id, model, {"content": piece}))))
            out_chars += len(part)
            continue
        arguments = part.arguments if isinstance(part.arguments, str) else _dumps(part.arguments)
        first = {"index": position, "id": part.id, "type": "function",
                 "function": {"name": part.name, "arguments": ""}}
        events.append((delay + part.delay_before, _data(_chunk(completion_id, model, {"tool_calls": [first]}))))
        for piece in _chunks(arguments, chunk) if arguments else []:
            fragment = {"index": position, "function": {"arguments": piece}}
            events.append((delay, _data(_chunk(completion_id, model, {"tool_calls": [fragment]}))))
        out_chars += len(arguments) + len(part.name)
        position += 1
    events.append((delay, _data(_chunk(completion_id, model, {}, finish))))
    resp = ChatResponse(headers={"content-type": "text/event-stream; charset=utf-8"}, events=events, end=end)
    resp.usage = {"completion_tokens": max(1, out_chars // 4), **(usage or {})}
    resp.completion_id, resp.model = completion_id, model
    return resp


def raw_chunks(*payloads: Any, end: str = "end", delay: float = 0.0) -> Response:
    """Exactly these ``data:`` payloads (dicts as JSON, strings verbatim), nothing added."""
    resp = Response(headers={"content-type": "text/event-stream; charset=utf-8"},
                    events=[(delay, _data(p)) for p in payloads], end=end)
    resp.segments()
    return resp


def chunk_error(message: str, *, type: str = "server_error", code: str | None = None,
                after: int = 2, of: ChatResponse | None = None) -> Response:
    """HTTP 200, the first `after` chunks of `of` (default: a short text answer), then an
    ``{"error": {...}}`` chunk, and the body ends (no [DONE])."""
    base = of if of is not None else chat("This answer is cut off before it is finished, mid-sentence")
    events = list(base.events[:after])
    events.append((0.0, _data({"error": {"message": message, "type": type, "param": None, "code": code}})))
    resp = Response(headers={"content-type": "text/event-stream; charset=utf-8"}, events=events)
    resp.segments()
    return resp


def error(code: int, message: str, *, type: str = "invalid_request_error", error_code: str | None = None,
          headers: dict[str, str] | None = None) -> Response:
    """An HTTP error with OpenAI's JSON error body (e.g. ``headers={"retry-after": "2"}``)."""
    body = {"error": {"message": message, "type": type, "param": None, "code": error_code}}
    return Response(status=code, headers={"content-type": "application/json", **(headers or {})},
                    body=_dumps(body).encode())


def html_error(code: int = 502, title: str = "502 Bad Gateway") -> Response:
    """A proxy's HTML error page."""
    page = (f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n"
            "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
    return Response(status=code, headers={"content-type": "text/html"}, body=page.encode())


class OpenAILoopback(LoopbackServer):
    """The loopback server with the chat-completions routes instead of the Messages API's."""

    async def _respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, buf: bytearray,
                       method: str, path: str, headers: dict[str, str], raw_body: bytes) -> bool:
        arrived = time.monotonic()
        route = path.split("?", 1)[0]
        if method == "GET" and route == "/v1/models":
            data = [{"id": m, "object": "model", "created": 1767225600, "owned_by": "loopback"} for m in self.models]
            await self._send_json(writer, 200, _dumps({"object": "list", "data": data}).encode())
            return True
        if method != "POST" or route != "/v1/chat/completions":
            await self._send_json(writer, 404, error(404, f"Unknown request URL: {method} {route}",
                                                     error_code="unknown_url").body or b"")
            return True
        try:
            body = json.loads(raw_body or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._record(self.errors, f"bad request body: {exc}")
            await self._send_json(writer, 400, error(400, f"Invalid JSON body: {exc}").body or b"")
            return True
        index = len(self.requests)
        received = Received(body, headers, arrived, route, self._started, raw_body)
        self._record(self.requests, received)
        if self.on_request is not None:
            self.on_request(received)
        resp = self._next(body, index)
        if resp is None:
            msg = f"loopback: the script ran out (request #{index} has no scripted response)"
            self._record(self.errors, msg)
            await self._send_json(writer, 500, error(500, msg, type="server_error").body or b"")
            return True
        if not resp.is_stream:
            await self._send_json(writer, resp.status, resp.body or b"", resp.headers)
            return True
        if isinstance(resp, ChatResponse):
            resp = self._with_usage(resp, body)
        return await self._stream(reader, writer, buf, resp, body)

    def _next(self, body: dict[str, Any], index: int) -> Response | None:
        try:
            if self.handler is not None:
                return self.handler(body, index)
            return self._queue.popleft() if self._queue else None
        except Exception as exc:  # noqa: BLE001 - surfaced in srv.errors and as the script running out
            self._record(self.errors, f"loopback: the handler failed on request #{index}: {exc!r}")
            return None

    @staticmethod
    def _with_usage(resp: ChatResponse, body: dict[str, Any]) -> Response:
        events = list(resp.events)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = dict(resp.usage or {})
            prompt = usage.pop("prompt_tokens", None) or _prompt_tokens(body)
            cached = usage.pop("cached_tokens", 0)
            completion = usage.get("completion_tokens", 1)
            payload = {"id": resp.completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                       "model": resp.model, "choices": [],
                       "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion,
                                 "prompt_tokens_details": {"cached_tokens": cached}}}
            events.append((0.0, _data(payload)))
        events.append((0.0, _data("[DONE]")))
        out = Response(status=resp.status, headers=resp.headers, events=events, end=resp.end, gates=resp.gates)
        out.segments()
        return out
