"""Model clients: the `ModelClient` protocol and `AnthropicModel` (official SDK, streaming).

A client turns one request into a stream of `StreamEvent`s.  The loop only
sees these events and `ModelError`, whatever the server: the Anthropic API,
a local server speaking the Messages API, or the offline `DemoModel`.

`StreamAccumulator` builds the final message from raw stream events in time
linear in its length: text, thinking and tool-input fragments are kept as
lists and joined once, at `content_block_stop`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 32000

# Context windows by model-name prefix; settings may override.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7": 200_000,
    "claude-3-5": 200_000,
    "claude": 200_000,
    "demo": 200_000,
}
OUTPUT_CAPS: dict[str, int] = {
    "claude-opus-4": 32_000,
    "claude-sonnet-4": 64_000,
    "claude-haiku-4": 64_000,
    "claude-3-7": 64_000,
    "claude-3-5": 8_192,
}


def context_window_for(model: str, default: int = 200_000) -> int:
    for prefix, size in sorted(CONTEXT_WINDOWS.items(), key=lambda kv: -len(kv[0])):
        if model.startswith(prefix):
            return size
    return default


def output_cap_for(model: str, default: int = 64_000) -> int:
    for prefix, size in sorted(OUTPUT_CAPS.items(), key=lambda kv: -len(kv[0])):
        if model.startswith(prefix):
            return size
    return default


# ---------------------------------------------------------------- request / events


@dataclass(slots=True)
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking: dict[str, Any] | None = None


@dataclass(slots=True)
class MessageStart:
    message_id: str
    model: str
    usage: dict[str, int]


@dataclass(slots=True)
class BlockStart:
    index: int
    block: dict[str, Any]


@dataclass(slots=True)
class BlockDelta:
    index: int
    # "text" | "thinking" | "signature" | "input_json"
    kind: str
    text: str


@dataclass(slots=True)
class BlockStop:
    """A content block is complete; for tool_use, `block["input"]` is parsed.

    A tool_use whose JSON did not parse carries `_parse_error` and must not run.
    """

    index: int
    block: dict[str, Any]


@dataclass(slots=True)
class MessageDelta:
    stop_reason: str | None
    usage: dict[str, int]


@dataclass(slots=True)
class MessageStop:
    message: dict[str, Any]
    stop_reason: str | None
    usage: dict[str, int]


StreamEvent = MessageStart | BlockStart | BlockDelta | BlockStop | MessageDelta | MessageStop


class ModelError(Exception):
    """A failed model call, classified so the loop can decide what to do.

    kind: overloaded | rate_limit | server | connection | timeout | prompt_too_long |
          auth | permission | invalid_request | not_found | api_error | refusal
    """

    RETRYABLE = frozenset({"overloaded", "rate_limit", "server", "connection", "timeout", "api_error"})

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        mid_stream: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.mid_stream = mid_stream

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE

    def __repr__(self) -> str:
        return f"ModelError({self.kind!r}, {self.message!r}, status={self.status})"


class ModelClient(Protocol):
    name: str
    # A short label for the header, e.g. "claude-sonnet-4-6" or "demo (offline)".
    label: str
    offline: bool

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response.  Raises `ModelError`.  Closing the iterator early
        (abort) must close the underlying connection."""
        ...


# ---------------------------------------------------------------- accumulation

_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def merge_usage(into: dict[str, int], usage: Any) -> dict[str, int]:
    """Usage in message_delta is cumulative and may omit fields: take what is present."""
    if usage is None:
        return into
    get = usage.get if isinstance(usage, dict) else (lambda k, _u=usage: getattr(_u, k, None))
    for key in _USAGE_KEYS:
        value = get(key)
        if isinstance(value, int):
            into[key] = value
    return into


class StreamAccumulator:
    """Raw Messages-API stream events (SDK objects or dicts) -> `StreamEvent`s."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, list[str]] = {}
        self._sig_parts: dict[int, list[str]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.message_id = ""
        self.model = ""
        self.started = False
        self.stopped = False
        self._done: set[int] = set()

    def feed(self, event: Any) -> StreamEvent | None:
        get = event.get if isinstance(event, dict) else (lambda k, _e=event: getattr(_e, k, None))
        etype = get("type")
        if etype == "content_block_delta":
            index = get("index")
            delta = get("delta")
            dget = delta.get if isinstance(delta, dict) else (lambda k, _d=delta: getattr(_d, k, None))
            dtype = dget("type")
            if dtype == "text_delta":
                text = dget("text") or ""
                self._parts.setdefault(index, []).append(text)
                return BlockDelta(index, "text", text)
            if dtype == "input_json_delta":
                part = dget("partial_json") or ""
                self._parts.setdefault(index, []).append(part)
                return BlockDelta(index, "input_json", part)
            if dtype == "thinking_delta":
                text = dget("thinking") or ""
                self._parts.setdefault(index, []).append(text)
                return BlockDelta(index, "thinking", text)
            if dtype == "signature_delta":
                sig = dget("signature") or ""
                self._sig_parts.setdefault(index, []).append(sig)
                return BlockDelta(index, "signature", sig)
            if dtype == "citations_delta":
                return None
            return None
        if etype == "content_block_start":
            index = get("index")
            raw = get("content_block")
            block = raw if isinstance(raw, dict) else raw.model_dump(exclude_none=True)
            block = dict(block)
            btype = block.get("type")
            if btype == "tool_use" or btype == "server_tool_use":
                block["input"] = {}
            self.blocks[index] = block
            self._parts[index] = []
            initial = block.get("text") if btype == "text" else block.get("thinking") if btype == "thinking" else None
            if initial:
                self._parts[index].append(initial)
            if btype == "thinking" and block.get("signature"):
                self._sig_parts[index] = [block["signature"]]
            return BlockStart(index, dict(block))
        if etype == "content_block_stop":
            index = get("index")
            block = self._finish_block(index)
            return BlockStop(index, block) if block is not None else None
        if etype == "message_start":
            message = get("message")
            mget = message.get if isinstance(message, dict) else (lambda k, _m=message: getattr(_m, k, None))
            self.message_id = mget("id") or ""
            self.model = mget("model") or ""
            merge_usage(self.usage, mget("usage"))
            self.started = True
            return MessageStart(self.message_id, self.model, dict(self.usage))
        if etype == "message_delta":
            delta = get("delta")
            dget = delta.get if isinstance(delta, dict) else (lambda k, _d=delta: getattr(_d, k, None))
            reason = dget("stop_reason")
            if reason:
                self.stop_reason = reason
            merge_usage(self.usage, get("usage"))
            return MessageDelta(self.stop_reason, dict(self.usage))
        if etype == "message_stop":
            self.stopped = True
            return MessageStop(self.message(), self.stop_reason, dict(self.usage))
        # ping and event types this client does not know are ignored.
        return None

    def _finish_block(self, index: int) -> dict[str, Any] | None:
        block = self.blocks.get(index)
        if block is None:
            return None
        parts = self._parts.pop(index, [])
        btype = block.get("type")
        if btype == "text":
            block["text"] = "".join(parts)
        elif btype == "thinking":
            block["thinking"] = "".join(parts)
            sig = self._sig_parts.pop(index, None)
            if sig is not None:
                block["signature"] = "".join(sig)
        elif btype in ("tool_use", "server_tool_use"):
            raw = "".join(parts)
            if raw.strip():
                try:
                    value = json.loads(raw)
                except ValueError as exc:
                    block["_parse_error"] = f"Tool input is not valid JSON: {exc}"
                    block["_raw_input"] = raw
                    value = {}
                if not isinstance(value, dict):
                    block["_parse_error"] = "Tool input is not a JSON object"
                    value = {}
                block["input"] = value
            else:
                block["input"] = {}
        self._done.add(index)
        return block

    def partial_blocks(self) -> list[dict[str, Any]]:
        """Blocks of an interrupted stream: finished ones as they are, unfinished
        text/thinking with what arrived so far and `_partial` set (tool_use left out)."""
        out = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if index in self._done:
                out.append(block)
                continue
            btype = block.get("type")
            parts = self._parts.get(index, [])
            if btype == "text" and parts:
                out.append({"type": "text", "text": "".join(parts), "_partial": True})
            elif btype == "thinking":
                continue  # A thinking block without its signature cannot be sent back.
        return out

    def message(self) -> dict[str, Any]:
        content = []
        for index in sorted(self.blocks):
            if index in self._done:
                content.append(self.blocks[index])
            # A block never closed is truncated and not part of the answer.
        return {"role": "assistant", "content": content}


# ---------------------------------------------------------------- Anthropic

_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)


def classify_status_error(exc: Any) -> ModelError:
    """An SDK status error (including SSE `error` events, which arrive with status 200)."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    etype = getattr(exc, "type", None)
    message = getattr(exc, "api_message", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        etype = etype or body["error"].get("type")
        message = message or body["error"].get("message")
    message = message or str(exc)
    retry_after = None
    response = getattr(exc, "response", None)
    if response is not None:
        retry_after = _retry_after(response.headers)
    mid_stream = status == 200
    if etype == "overloaded_error" or status == 529:
        kind = "overloaded"
    elif etype == "rate_limit_error" or status == 429:
        kind = "rate_limit"
    elif status == 413 or (etype == "invalid_request_error" and _PROMPT_TOO_LONG.search(message)):
        kind = "prompt_too_long"
    elif etype == "authentication_error" or status == 401:
        kind = "auth"
    elif etype == "permission_error" or status == 403:
        kind = "permission"
    elif etype == "not_found_error" or status == 404:
        kind = "not_found"
    elif etype == "invalid_request_error" or status == 400:
        kind = "invalid_request"
    elif etype == "api_error" or (status is not None and status >= 500):
        kind = "server"
    elif etype == "timeout_error" or status == 408:
        kind = "timeout"
    else:
        kind = "api_error"
    return ModelError(kind, message, status=status, retry_after=retry_after, mid_stream=mid_stream)


def _retry_after(headers: Any) -> float | None:
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000.0
        value = headers.get("retry-after")
        if value is not None:
            return float(value)
    except (TypeError, ValueError):
        return None
    return None


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


def stream_error(data: str, started: bool) -> ModelError:
    """An SSE `error` event after HTTP 200, classified by its `error.type`."""
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    etype = error.get("type") if isinstance(error, dict) else None
    message = (error.get("message") if isinstance(error, dict) else None) or data or "stream error"
    kinds = {
        "overloaded_error": "overloaded",
        "rate_limit_error": "rate_limit",
        "api_error": "server",
        "timeout_error": "timeout",
        "authentication_error": "auth",
        "permission_error": "permission",
        "not_found_error": "not_found",
        "request_too_large": "prompt_too_long",
    }
    kind = kinds.get(etype or "", "api_error")
    if etype == "invalid_request_error":
        kind = "prompt_too_long" if _PROMPT_TOO_LONG.search(message) else "invalid_request"
    return ModelError(kind, message, status=200, mid_stream=True if started else False)


def _env_timeout() -> float:
    try:
        return float(os.environ["API_TIMEOUT_MS"]) / 1000.0
    except (KeyError, ValueError):
        return 600.0


class AnthropicModel:
    """Streams from the Messages API through the official SDK.

    The SDK's own retries are off (`max_retries=0`): the loop retries, so that
    every retry is visible to the user and counted for model fallback.
    `timeout` (default: `API_TIMEOUT_MS`, else 600 s) is also the read-stall
    limit: a stream that sends nothing for that long fails as a retryable timeout.
    """

    offline = False

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
    ) -> None:
        from anthropic import AsyncAnthropic

        if timeout is None:
            timeout = _env_timeout()

        self.name = model
        self.label = model
        api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        auth_token = auth_token if auth_token is not None else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not api_key and not auth_token:
            # Local servers speaking the Messages API usually need no key.
            api_key = "no-key"
        self.base_url = base_url
        # False once the server answered count_tokens with "not found" (many local servers).
        self._has_count_tokens = True
        self._client = AsyncAnthropic(
            api_key=api_key or None,
            auth_token=auth_token or None,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
        )

    async def count_tokens(self, request: ModelRequest) -> int | None:
        """The exact input tokens of `request` from the count-tokens endpoint, or
        None when the server does not offer it or the count fails."""
        import anthropic

        if not self._has_count_tokens or not request.messages:
            return None
        kwargs: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            result = await self._client.messages.count_tokens(**kwargs)
        except anthropic.NotFoundError:
            self._has_count_tokens = False
            return None
        except anthropic.APIError:
            return None
        return int(result.input_tokens)

    async def aclose(self) -> None:
        """Close the HTTP connection pool, on the loop that used it.

        Without this, the SDK closes a garbage-collected client on whatever loop
        happens to be running then, which fails when that is another loop."""
        await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import anthropic

        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools
        if request.thinking:
            kwargs["thinking"] = request.thinking
        acc = StreamAccumulator()
        try:
            # The SDK sends the request (auth, headers, status errors); the SSE body is
            # decoded here: the SDK's per-event pydantic models cost ~3x the CPU.
            async with self._client.messages.with_streaming_response.create(stream=True, **kwargs) as response:
                async for name, data in iter_sse(response.http_response.aiter_bytes()):
                    if name == "ping":
                        continue
                    if name == "error":
                        raise stream_error(data, acc.started)
                    if not data:
                        continue
                    event = acc.feed(json.loads(data))
                    if event is not None:
                        yield event
            if not acc.stopped:
                raise ModelError("connection", "The stream ended before message_stop", mid_stream=acc.started)
        except anthropic.APIStatusError as exc:
            err = classify_status_error(exc)
            err.mid_stream = err.mid_stream or acc.started
            raise err from exc
        except anthropic.APITimeoutError as exc:
            raise ModelError("timeout", "The request timed out", mid_stream=acc.started) from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError(
                "connection", f"Connection error: {exc.__cause__ or exc}", mid_stream=acc.started
            ) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ModelError("api_error", str(exc), mid_stream=acc.started) from exc
        except ValueError as exc:
            raise ModelError("api_error", f"Malformed stream event: {exc}", mid_stream=acc.started) from exc
        except Exception as exc:
            # httpx2 transport errors raised while iterating an open stream.
            if type(exc).__module__.startswith(("httpx", "httpcore", "h11")) and "Timeout" in type(exc).__name__:
                raise ModelError(
                    "timeout", f"The response stalled: {type(exc).__name__}", mid_stream=acc.started
                ) from exc
            if type(exc).__module__.startswith(("httpx", "httpcore", "h11")):
                raise ModelError(
                    "connection", f"Connection lost: {type(exc).__name__}: {exc}", mid_stream=acc.started
                ) from exc
            raise
