"""A request to a model and the events of its streamed response.

`StreamAccumulator` builds the final message from raw stream events in time
linear in its length: text, thinking and tool-input fragments go into a
`TextBuffer` (joined as they come, so a long answer holds about its own size,
not a string per delta) and are read once, at `content_block_stop`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..textbuffer import TextBuffer

if TYPE_CHECKING:
    from ..memo import HistoryMemo

DEFAULT_MAX_TOKENS = 32000


@dataclass(slots=True)
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = DEFAULT_MAX_TOKENS
    # Extended thinking in the settings' words: "off", "adaptive", a token budget, or None for
    # the model's default; each provider translates it (engine/models/thinking.py for Claude).
    reasoning: str | int | None = "off"
    # How hard the model should try: "low" | "medium" | "high" | "max" (where it can be steered).
    effort: str | None = None
    # The Messages API's own `thinking` object, e.g. {"type": "adaptive"}: sent as given,
    # instead of what `reasoning` would become.
    thinking: dict[str, Any] | None = None
    # Mark the static prefix and the newest message for the prompt cache (engine/models/caching.py).
    prompt_caching: bool = False
    # anthropic-beta flags sent as given, with `thinking`.
    betas: tuple[str, ...] = ()
    # The conversation's memo (engine/memo.py): each message's JSON is made once across requests.
    memo: HistoryMemo | None = None


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


# Why a response ended, in the Messages API's words (other providers map theirs onto these).
StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "refusal", "pause_turn", "stop_sequence", "model_context_window_exceeded"
]


@dataclass(slots=True)
class MessageDelta:
    stop_reason: StopReason | str | None
    usage: dict[str, int]


@dataclass(slots=True)
class MessageStop:
    message: dict[str, Any]
    stop_reason: StopReason | str | None
    usage: dict[str, int]


@dataclass(slots=True)
class StreamNotice:
    """Something the client did on its own that the user should hear about (the loop posts a notice)."""

    message: str


StreamEvent = MessageStart | BlockStart | BlockDelta | BlockStop | MessageDelta | MessageStop | StreamNotice


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


# Deltas joined into their block's text: the delta type -> (its field, the BlockDelta kind).
_ACCUMULATED_DELTAS = {
    "text_delta": ("text", "text"),
    "input_json_delta": ("partial_json", "input_json"),
    "thinking_delta": ("thinking", "thinking"),
}


class StreamAccumulator:
    """Raw Messages-API stream events (SDK objects or dicts) -> `StreamEvent`s."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, TextBuffer] = {}
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
            accumulated = _ACCUMULATED_DELTAS.get(dtype)
            if accumulated is not None:
                field, kind = accumulated
                text = dget(field) or ""
                self._buffer(index).append(text)
                return BlockDelta(index, kind, text)
            if dtype == "signature_delta":
                sig = dget("signature") or ""
                self._sig_parts.setdefault(index, []).append(sig)
                return BlockDelta(index, "signature", sig)
            if dtype == "citations_delta":
                # Kept on the block: the API expects its citations back as it sent them.
                citation = dget("citation")
                block = self.blocks.get(index)
                if block is not None and citation is not None:
                    if not isinstance(citation, dict):
                        citation = citation.model_dump(exclude_none=True)
                    block["citations"] = [*(block.get("citations") or []), citation]
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
            self._parts[index] = TextBuffer()
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

    def delta(self, index: int, kind: str, text: str) -> BlockDelta:
        """A text, thinking or input_json fragment of block `index`: what `feed` does with a
        content_block_delta, for providers that translate their own chunks (no event dict made)."""
        self._buffer(index).append(text)
        return BlockDelta(index, kind, text)

    def _buffer(self, index: int) -> TextBuffer:
        buffer = self._parts.get(index)
        if buffer is None:
            buffer = self._parts[index] = TextBuffer()
        return buffer

    def _finish_block(self, index: int) -> dict[str, Any] | None:
        block = self.blocks.get(index)
        if block is None:
            return None
        parts = self._parts.pop(index, None)
        whole = parts.getvalue() if parts is not None else ""
        btype = block.get("type")
        if btype == "text":
            block["text"] = whole
            if "citations" in block and not block["citations"]:
                del block["citations"]  # an empty list the start event carried, not a citation
        elif btype == "thinking":
            block["thinking"] = whole
            sig = self._sig_parts.pop(index, None)
            if sig is not None:
                block["signature"] = "".join(sig)
        elif btype in ("tool_use", "server_tool_use"):
            raw = whole
            if raw.strip():
                try:
                    value = json.loads(raw)
                except ValueError as exc:
                    block["_parse_error"] = f"Tool input is not valid JSON: {exc}"
                    block["_raw_input"] = raw
                    value = {}
                except RecursionError:
                    # Deeper than the decoder goes (`[[[[…`): this call fails, the run goes on.
                    block["_parse_error"] = (
                        f"Tool input is nested too deeply to parse ({len(raw)} characters of JSON)"
                    )
                    value = {}
                if not isinstance(value, dict):
                    block["_parse_error"] = "Tool input is not a JSON object"
                    value = {}
                block["input"] = value
            else:
                block["input"] = {}
        self._done.add(index)
        return block

    def message(self) -> dict[str, Any]:
        content = []
        for index in sorted(self.blocks):
            if index in self._done:
                content.append(self.blocks[index])
            # A block never closed is truncated and not part of the answer.
        return {"role": "assistant", "content": content}
