"""`OpenAIChatModel`: OpenAI-compatible `POST /chat/completions` over httpx2, translated both ways.

The loop's history is in the Messages API's shape (engine/messages.py); this module turns a
`ModelRequest` into a chat-completions body (function tools, assistant `tool_calls`,
`role: "tool"` results paired by id, thinking left out) and the streamed chunks back into
the `StreamEvent`s every client yields, by feeding the same `StreamAccumulator` the
Messages API's events would: text, reasoning as thinking, and each tool call by its index,
handed over complete when the next one starts so tools run while the stream goes on.
No `openai` SDK: the wire format is small and the SDK's import costs seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .base import ModelClient, ModelError
from .facts import facts_for

if TYPE_CHECKING:  # loaded with the first request, not the first frame
    import httpx2

    from .body import Body
    from .stream import ModelRequest, StreamAccumulator, StreamEvent

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

# finish_reason -> the loop's stop reason (the Messages API's words).
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
# Error codes and types of OpenAI-compatible servers -> `ModelError.kind`.
_KINDS_BY_CODE = {
    "context_length_exceeded": "prompt_too_long",
    "string_above_max_length": "prompt_too_long",
    "rate_limit_exceeded": "rate_limit",
    "insufficient_quota": "rate_limit",
    "invalid_api_key": "auth",
    "model_not_found": "not_found",
    "server_error": "server",
}
_KINDS_BY_STATUS = {401: "auth", 403: "permission", 404: "not_found", 408: "timeout", 413: "prompt_too_long",
                    429: "rate_limit", 529: "overloaded"}
# Phrases local servers use for an over-long prompt without a code (llama.cpp, vLLM, Ollama).
_TOO_LONG_PHRASES = ("maximum context length", "context length", "exceeds the available context size",
                     "too many tokens", "prompt is too long")


class OpenAIChatModel(ModelClient):
    """Streams from an OpenAI-compatible chat-completions endpoint (OpenAI, Groq, OpenRouter,
    DeepSeek, Gemini's OpenAI endpoint, Ollama, llama.cpp, vLLM...).

    `base_url` includes the API version (`https://api.openai.com/v1`), as OPENAI_BASE_URL does.
    The key is read from the environment variable `api_key_env` names (OPENAI_API_KEY by
    default); a local server needs none.  No client-side retries: the loop retries."""

    # A `length` stop is nudged to go on, never asked again with a larger limit: servers'
    # output caps are not known here, and a larger max_tokens is a 400 on most of them.
    escalates_output = False

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float | None = None,
    ) -> None:
        from .anthropic import _env_timeout

        self.name = model
        self.label = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.key_env = api_key_env or DEFAULT_KEY_ENV
        self._api_key = api_key if api_key is not None else os.environ.get(self.key_env) or None
        self._timeout = _env_timeout() if timeout is None else timeout
        self._client: httpx2.AsyncClient | None = None
        self.credential_hint = f"Check {self.key_env} and the base URL ({self.base_url})."

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            import httpx2

            from .transport import CONNECT_TIMEOUT, tls_context

            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout, connect=min(self._timeout, CONNECT_TIMEOUT)),
                follow_redirects=False,
                verify=tls_context(),
            )
        return self._client

    def _headers(self) -> dict[str, str]:
        from ... import __version__

        headers = {"Accept": "application/json", "Content-Type": "application/json",
                   "User-Agent": f"agent-tui/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def prepare(self) -> None:
        from .transport import tls_context

        tls_context()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def list_models(self) -> list[str]:
        """`GET /models`: the ids the server offers, sorted; [] when it cannot say."""
        import httpx2

        try:
            response = await self._http().get(self.base_url + "/models", headers=self._headers())
            data = response.json().get("data") if response.status_code == 200 else None
        except (httpx2.HTTPError, ValueError, AttributeError):
            return []
        if not isinstance(data, list):
            return []
        return sorted(m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return chat_body(request, limit_field=self._limit_field())

    def encode(self, request: ModelRequest) -> Body:
        """`request_body` as the bytes sent, each history message translated and serialised
        once across requests (engine/models/body.py).  Called in a worker thread."""
        return encode_chat_body(request, limit_field=self._limit_field())

    def _limit_field(self) -> str:
        # OpenAI's own API rejects max_tokens for its reasoning models; compatible servers know max_tokens.
        return "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import httpx2

        from .sse import drain, iter_sse
        from .stream import StreamAccumulator
        from .transport import transport_error

        url = self.base_url + "/chat/completions"
        # Proportional to the history: never on the event loop's thread (the TUI draws there).
        body = await asyncio.to_thread(self.encode, request)
        chunks = ChunkTranslator(StreamAccumulator())
        try:
            headers = {**self._headers(), **body.headers()}
            async with self._http().stream("POST", url, content=body.content(), headers=headers) as response:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise http_error(response.status_code, response.headers, raw, response.reason_phrase)
                events = iter_sse(response.aiter_bytes())
                async for _name, data in events:
                    if not data.startswith("{"):  # chunks are JSON objects: anything else is looked at
                        if data.strip() == "[DONE]":
                            await drain(events)  # the response is whole, whether or not the server ends the stream
                            break
                        if not data.strip():
                            continue
                    for event in chunks.feed(json.loads(data)):
                        yield event
            for event in chunks.finish():
                yield event
        except httpx2.TransportError as exc:
            raise transport_error(exc, url, chunks.acc.started) from exc
        except ValueError as exc:
            raise ModelError("api_error", f"Malformed stream chunk: {exc}", mid_stream=chunks.acc.started) from exc


# ---------------------------------------------------------------- the request


def chat_body(request: ModelRequest, *, limit_field: str = "max_tokens") -> dict[str, Any]:
    """The JSON body of a streaming chat-completions request for `request`."""
    body = _chat_body(request, limit_field)
    body["messages"] = [*_system_message(request), *(c for m in request.messages for c in chat_messages(m))]
    return body


def encode_chat_body(request: ModelRequest, *, limit_field: str = "max_tokens") -> Body:
    """`chat_body`'s bytes, each history message's translation serialised once (`request.memo`)."""
    from .body import dumps, join_body, pieces

    memo = request.memo.encoded("openai") if request.memo is not None else None
    messages = [dumps(m) for m in _system_message(request)] + pieces(request.messages, memo, _chat_bytes)
    return join_body(_chat_body(request, limit_field), "messages", messages, memo)


def _chat_bytes(message: dict[str, Any]) -> bytes:
    """One history message's chat messages as JSON, comma-joined (empty when it has none)."""
    from .body import dumps

    return b",".join(dumps(c) for c in chat_messages(message))


def _system_message(request: ModelRequest) -> list[dict[str, Any]]:
    from .caching import system_text

    system = system_text(request.system) if request.system else ""
    return [{"role": "system", "content": system}] if system else []


def _chat_body(request: ModelRequest, limit_field: str) -> dict[str, Any]:
    """The body with its messages left empty (filled by the callers)."""
    body: dict[str, Any] = {"model": request.model, "messages": [], limit_field: request.max_tokens}
    if request.effort and facts_for(request.model, "openai").thinking:
        # OpenAI's reasoning models take low | medium | high.
        body["reasoning_effort"] = "high" if request.effort == "max" else request.effort
    tools = [chat_tool(t) for t in request.tools if "input_schema" in t]
    if tools:
        body["tools"] = tools
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


def chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"], "description": tool.get("description", ""), "parameters": tool["input_schema"]}
    return {"type": "function", "function": function}


def chat_messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One Messages-API message as chat messages: an assistant turn with `tool_calls`, or the
    `role: "tool"` results (in block order) followed by what else the user message holds."""
    role, content = message["role"], message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    blocks = content or []
    if role == "assistant":
        return [_assistant(blocks)]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "tool_result":
            text, attachments = _result_parts(block)
            out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
            parts.extend(attachments)
        else:
            part = _user_part(block)
            if part is not None:
                parts.append(part)
    if parts:
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    # Thinking is the model's own scratch: shown, never sent back as content.
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [
        {"id": b["id"], "type": "function",
         "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _result_parts(block: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A tool_result's text, and its images or documents (a tool message holds text only:
    they follow in the user message after the results)."""
    content = block.get("content")
    if isinstance(content, str):
        text, attachments = content, []
    else:
        texts, attachments = [], []
        for part in content or []:
            if part.get("type") == "text":
                texts.append(part.get("text", ""))
            else:
                converted = _user_part(part)
                if converted is not None:
                    attachments.append(converted)
        text = "\n".join(texts)
    if block.get("is_error") and not text.startswith("Error"):
        text = f"Error: {text}"
    return text, attachments


def _user_part(block: dict[str, Any]) -> dict[str, Any] | None:
    btype = block.get("type")
    if btype == "text":
        return {"type": "text", "text": block.get("text", "")}
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return None
    data_url = f"data:{source.get('media_type', 'application/octet-stream')};base64,{source.get('data', '')}"
    if btype == "image":
        return {"type": "image_url", "image_url": {"url": data_url}}
    if btype == "document":
        return {"type": "file", "file": {"filename": block.get("title") or "document.pdf", "file_data": data_url}}
    return None


# ---------------------------------------------------------------- the response


class ChunkTranslator:
    """Chat-completion chunks -> the Messages API's stream events, fed to a `StreamAccumulator`.

    Reasoning (`reasoning_content` or `reasoning`) opens a thinking block, content a text block,
    each new tool-call index a tool_use block; opening a block closes the one before it."""

    def __init__(self, acc: StreamAccumulator) -> None:
        self.acc = acc
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {}
        self._next_index = 0
        self._open: tuple[str, int] | None = None  # (kind, block index); kind "thinking" | "text" | "tool:N"
        self._tools: dict[int, str] = {}  # tool-call position -> its id

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        error = chunk.get("error")
        if error is not None:
            raise chunk_error(error, self.acc.started)
        if not self.acc.started:
            start = {"id": chunk.get("id") or "", "model": chunk.get("model") or "", "usage": {}}
            self._push(out, {"type": "message_start", "message": start})
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage_of(usage)
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta:
                self._delta(out, delta)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def finish(self) -> list[StreamEvent]:
        """The end of the response: close the open block, then the stop reason and usage."""
        if not self.acc.started:
            raise ModelError("connection", "The stream ended before any chunk", mid_stream=False)
        if self.finish_reason is None:
            raise ModelError("connection", "The stream ended before its finish_reason", mid_stream=True)
        out: list[StreamEvent] = []
        self._close(out)
        reason = STOP_REASONS.get(self.finish_reason, "end_turn")
        if self._tools and reason == "end_turn":
            reason = "tool_use"  # some servers say "stop" after tool calls
        self._push(out, {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": self.usage})
        self._push(out, {"type": "message_stop"})
        return out

    def _delta(self, out: list[StreamEvent], delta: dict[str, Any]) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            index = self._ensure(out, "thinking", {"type": "thinking", "thinking": ""})
            out.append(self.acc.delta(index, "thinking", reasoning))
        text = delta.get("content")
        if text and isinstance(text, str):
            index = self._ensure(out, "text", {"type": "text", "text": ""})
            out.append(self.acc.delta(index, "text", text))
        calls = delta.get("tool_calls")
        if calls:
            for call in calls:
                self._tool_delta(out, call)

    def _tool_delta(self, out: list[StreamEvent], call: dict[str, Any]) -> None:
        position = self._position(call)
        function = call.get("function") or {}
        kind = f"tool:{position}"
        if position not in self._tools:
            # A server that sends no id gets one unique in the history (ids pair results).
            self._tools[position] = call.get("id") or "call_" + secrets.token_hex(12)
            block = {"type": "tool_use", "id": self._tools[position], "name": function.get("name") or "", "input": {}}
            self._ensure(out, kind, block)
        elif self._open is None or self._open[0] != kind:
            raise ModelError("api_error", f"Tool call {position} went on after the next one began", mid_stream=True)
        arguments = function.get("arguments")
        if arguments and isinstance(arguments, str):
            assert self._open is not None
            out.append(self.acc.delta(self._open[1], "input_json", arguments))

    def _position(self, call: dict[str, Any]) -> int:
        """The call's position: its `index`; for servers that send whole calls without one
        (or reuse an index for another id), the call with its id, a nameless fragment the call
        being streamed, else the next position."""
        index, call_id = call.get("index"), call.get("id")
        named = bool((call.get("function") or {}).get("name"))
        if isinstance(index, int) and (not call_id or self._tools.get(index, call_id) == call_id):
            if not (named and not call_id and index in self._tools):
                return index
        for position, known in self._tools.items():
            if call_id and known == call_id:
                return position
        if not call_id and not named and self._open is not None and self._open[0].startswith("tool:"):
            return int(self._open[0][5:])  # more arguments for the call being streamed
        return max(self._tools, default=-1) + 1

    def _ensure(self, out: list[StreamEvent], kind: str, block: dict[str, Any]) -> int:
        if self._open is not None and self._open[0] == kind:
            return self._open[1]
        self._close(out)
        index = self._next_index
        self._next_index += 1
        self._open = (kind, index)
        self._push(out, {"type": "content_block_start", "index": index, "content_block": block})
        return index

    def _close(self, out: list[StreamEvent]) -> None:
        if self._open is not None:
            self._push(out, {"type": "content_block_stop", "index": self._open[1]})
            self._open = None

    def _push(self, out: list[StreamEvent], raw: dict[str, Any]) -> None:
        event = self.acc.feed(raw)
        if event is not None:
            out.append(event)


def usage_of(usage: dict[str, Any]) -> dict[str, int]:
    """Chat-completions usage in the Messages API's terms (cached prompt tokens are cache reads)."""
    prompt = usage.get("prompt_tokens") or 0
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0 if isinstance(details, dict) else 0
    return {
        "input_tokens": max(0, int(prompt) - int(cached)),
        "output_tokens": int(usage.get("completion_tokens") or 0),
        "cache_read_input_tokens": int(cached),
        "cache_creation_input_tokens": 0,
    }


# ---------------------------------------------------------------- errors


def error_kind(status: int | None, error: dict[str, Any]) -> str:
    code = str(error.get("code") or "")
    etype = str(error.get("type") or "")
    message = str(error.get("message") or "").lower()
    if code in _KINDS_BY_CODE:
        return _KINDS_BY_CODE[code]
    if any(phrase in message for phrase in _TOO_LONG_PHRASES) and status in (None, 400, 413):
        return "prompt_too_long"
    if status in _KINDS_BY_STATUS:
        return _KINDS_BY_STATUS[status]
    if etype in ("overloaded_error", "server_error") or (status == 503 and "overload" in message):
        return "overloaded" if "overload" in etype + message else "server"
    if status is not None and status >= 500:
        return "server"
    if status == 400 or etype == "invalid_request_error":
        return "invalid_request"
    return "api_error"


def http_error(status: int, headers: Any, raw: bytes, reason: str = "") -> ModelError:
    """An HTTP error response as a `ModelError`; a body that is not the JSON error object (a
    proxy's HTML page) is shown as the status and its reason, not pasted in."""
    from .transport import retry_after, should_retry

    error: dict[str, Any] = {}
    try:
        parsed = json.loads(raw)
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            error = parsed["error"]
        elif isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
            error = {"message": parsed["error"]}
    except ValueError:
        pass
    message = error.get("message") if isinstance(error.get("message"), str) else None
    if not message:
        message = f"HTTP {status} {reason}".strip()
    kind = error_kind(status, error)
    retry = should_retry(headers)
    if error.get("code") == "insufficient_quota":
        retry = False  # out of credit: waiting does not help
    return ModelError(kind, message, status=status, retry_after=retry_after(headers), should_retry=retry)


def chunk_error(error: Any, started: bool) -> ModelError:
    """An `{"error": {...}}` chunk inside a 200 stream."""
    if not isinstance(error, dict):
        error = {"message": str(error)}
    status = error.get("status") or error.get("code")
    status = status if isinstance(status, int) else None
    message = str(error.get("message") or "stream error")
    return ModelError(error_kind(status, error), message, status=200, mid_stream=started)
