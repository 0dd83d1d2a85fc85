"""The demo model's answer as raw Messages-API events: what `DemoModel.stream` paces and
passes through `StreamAccumulator`, as the real API's events are."""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_tui.engine.models.stream import ModelRequest

    from .plan import DemoPlan

MODEL = "demo"
# The demo's token count: about four characters a token (the pace is set in tokens a second).
CHARS_PER_TOKEN = 4


def _text_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "tool_use":
            return len(value.get("name", "")) + len(json.dumps(value.get("input", {})))
        if kind == "tool_result":
            return _text_chars(value.get("content"))
        if kind in ("thinking", "redacted_thinking"):
            return len(value.get("thinking", "") or value.get("data", ""))
        if "text" in value:
            return _text_chars(value["text"])
        if "content" in value:
            return _text_chars(value["content"])
    return 0


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def _text_pieces(text: str) -> list[str]:
    """Deltas of a few characters (about one or two tokens), joined back exactly."""
    return re.findall(r"\s*\S{1,6}|\s+", text)


def _json_pieces(raw: str) -> list[str]:
    return [raw[i : i + 12] for i in range(0, len(raw), 12)]


def _message_id(request: ModelRequest) -> str:
    digest = hashlib.sha256(
        json.dumps(
            [request.model, request.system, request.messages, [t.get("name") for t in request.tools]],
            sort_keys=True,
            default=str,
        ).encode("utf-8")
    ).hexdigest()
    return f"msg_demo_{digest[:24]}"


def raw_events(request: ModelRequest, plan: DemoPlan) -> list[dict[str, Any]]:
    """The raw Messages-API events for `plan`, cut at `request.max_tokens`.

    Delta events carry a private `_chars` count used for pacing (removed
    before they reach the accumulator)."""
    input_tokens = _tokens(_text_chars(request.system) + _text_chars(request.messages) + len(json.dumps(request.tools)))
    budget = max(0, int(request.max_tokens)) * CHARS_PER_TOKEN
    events: list[dict[str, Any]] = [_message_start(request, input_tokens), {"type": "ping"}]
    used = 0
    cut = False
    index = 0
    if plan.text:
        text = plan.text
        if len(text) > budget:
            text, cut = text[:budget], True
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        events.extend(_delta(index, {"type": "text_delta", "text": piece}, piece) for piece in _text_pieces(text))
        events.append({"type": "content_block_stop", "index": index})
        used += len(text)
        index += 1
    for call in plan.tools:
        if cut or used >= budget:
            cut = True
            break
        raw = json.dumps(call.input, ensure_ascii=False)
        if used + len(raw) > budget:
            raw, cut = raw[: budget - used], True
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append(
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}
        )
        events.extend(
            _delta(index, {"type": "input_json_delta", "partial_json": piece}, piece) for piece in _json_pieces(raw)
        )
        events.append({"type": "content_block_stop", "index": index})
        used += len(raw)
        index += 1
    stop_reason = "max_tokens" if cut else "tool_use" if plan.tools else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": max(1, _tokens(used))},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _message_start(request: ModelRequest, input_tokens: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": _message_id(request),
            "type": "message",
            "role": "assistant",
            "model": request.model or MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }


def _delta(index: int, delta: dict[str, Any], piece: str) -> dict[str, Any]:
    """A content_block_delta carrying `piece`, with its length for pacing."""
    return {"type": "content_block_delta", "index": index, "delta": delta, "_chars": len(piece)}
