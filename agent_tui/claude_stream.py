"""Claude Code's `stream-json` messages, made from the engine's bus events.

Scripts written for `claude -p --output-format stream-json --verbose` read one
JSON object per line: a `system`/`init` message, an `assistant` message per
completed content block (the API message with that block, as Claude Code
emits them), a `user` message per `tool_result`, `system`/`compact_boundary`
after a compaction, and the `result` object last.  With
`--include-partial-messages`, `stream_event` lines carry the Messages API
stream events (`message_start`, `content_block_delta`, ...) as they arrive.
Subagent messages carry the Agent tool_use id in `parent_tool_use_id`.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import __version__
from .engine import events as ev
from .tools.agent import BUILT_IN_AGENTS

if TYPE_CHECKING:
    from .engine import Session

Emit = Callable[[dict[str, Any]], None]


def _uuid() -> str:
    return str(uuid.uuid4())


def api_key_source() -> str:
    """Where the credentials came from, in Claude Code's words."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "ANTHROPIC_API_KEY"
    if os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return "ANTHROPIC_AUTH_TOKEN"
    return "none"


class ApiClock:
    """A bus listener adding up the time spent in model requests (the result's `duration_api_ms`):
    each request from its `request_started` to its last `usage` (the end of its stream)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.seconds = 0.0
        # parent_tool_use_id -> [start, seconds already counted] of the request in flight.
        self._open: dict[str | None, list[float]] = {}

    def __call__(self, event: ev.Event) -> None:
        kind = type(event)
        if kind is ev.RequestStarted:
            self._open[event.parent_tool_use_id] = [self._clock(), 0.0]
        elif kind is ev.Usage:
            entry = self._open.get(event.parent_tool_use_id)
            if entry is not None:
                elapsed = self._clock() - entry[0]
                self.seconds += elapsed - entry[1]
                entry[1] = elapsed

    @property
    def ms(self) -> int:
        return int(self.seconds * 1000)


class _Request:
    """One model request of one agent (main or subagent): the message being streamed."""

    __slots__ = ("id", "model", "usage", "started", "open")

    def __init__(self, model: str) -> None:
        self.id = f"msg_{uuid.uuid4().hex[:24]}"
        self.model = model
        self.usage: dict[str, int] = {}
        self.started = False
        # Content block indexes with a `content_block_start` sent (partial messages).
        self.open: set[int] = set()


class ClaudeCodeStream:
    """A bus listener that turns engine events into Claude Code's stream-json messages."""

    def __init__(self, session: Session, emit: Emit, *, include_partial: bool = False,
                 version: str | None = None, replay_user_messages: bool = False) -> None:
        self.session = session
        # `--replay-user-messages`: each prompt goes back out with its uuid (what `rewind_files` names).
        self.replay_user_messages = replay_user_messages
        # The Claude Code version whose protocol is spoken (`claude_code_version` of `init`; the SDK reads it).
        self.version = version
        self.emit = emit
        self.include_partial = include_partial
        # Keyed by parent_tool_use_id (None: the main agent).
        self._requests: dict[str | None, _Request] = {}

    def __call__(self, event: ev.Event) -> None:
        kind = type(event)
        if kind is ev.TextDelta or kind is ev.ThinkingDelta:
            if self.include_partial:
                self._delta(event)  # type: ignore[arg-type]
        elif kind is ev.BlockCompleted:
            self._block(event)  # type: ignore[arg-type]
        elif kind is ev.ToolFinished:
            self._tool_result(event)  # type: ignore[arg-type]
        elif kind is ev.RequestStarted:
            self._requests[event.parent_tool_use_id] = _Request(event.model)  # type: ignore[attr-defined]
        elif kind is ev.Usage:
            self._usage(event)  # type: ignore[arg-type]
        elif kind is ev.SessionStarted:
            self.emit(self.init_message(event))  # type: ignore[arg-type]
        elif kind is ev.UserMessage and self.replay_user_messages and event.parent_tool_use_id is None:
            self.emit(self._replay(event))  # type: ignore[arg-type]
        elif kind is ev.BackgroundTask:
            self.emit(self._task(event))  # type: ignore[arg-type]
        elif kind is ev.AttemptDiscarded:
            self._discarded(event)  # type: ignore[arg-type]
        elif kind is ev.Compaction and event.parent_tool_use_id is None:
            self.emit(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "session_id": self.session.session_id,
                    "uuid": _uuid(),
                    # Claude Code knows "manual" and "auto"; a reactive compaction is automatic too.
                    "compact_metadata": {
                        "trigger": "manual" if event.trigger == "manual" else "auto",  # type: ignore[attr-defined]
                        "pre_tokens": event.tokens_before,  # type: ignore[attr-defined]
                    },
                }
            )

    # ------------------------------------------------------------ messages

    def init_message(self, event: ev.SessionStarted) -> dict[str, Any]:
        session = self.session
        servers = [{"name": s.name, "status": s.state, **({"error": s.error} if s.error else {})}
                   for s in session.mcp_statuses()]
        commands = session.custom_commands
        agents = {**BUILT_IN_AGENTS, **session.agent_types}
        return {
            "type": "system",
            "subtype": "init",
            "cwd": event.cwd,
            "session_id": event.session_id,
            "tools": list(event.tools),
            "mcp_servers": servers,
            "model": session.model.name,
            "permissionMode": event.permission_mode,
            "slash_commands": sorted([*commands, *(p.command for p in session.mcp_prompts())]),
            "agents": sorted(agents),
            "apiKeySource": api_key_source(),
            "output_style": "default",
            "agent_tui_version": __version__,
            "uuid": _uuid(),
            **({"claude_code_version": self.version} if self.version else {}),
        }

    def _replay(self, event: ev.UserMessage) -> dict[str, Any]:
        """A prompt as Claude Code echoes it back (`isReplay`), with the uuid it goes by."""
        return {"type": "user", "message": {"role": "user", "content": event.text}, "parent_tool_use_id": None,
                "session_id": self.session.session_id, "uuid": event.uuid or _uuid(), "isReplay": True}

    def _task(self, event: ev.BackgroundTask) -> dict[str, Any]:
        """A background agent's `task_started` or `task_notification` (the SDK's task messages)."""
        message: dict[str, Any] = {"type": "system", "task_id": event.task_id, "tool_use_id": event.task_id,
                                   "session_id": self.session.session_id, "uuid": _uuid()}
        if event.status == "running":
            return {**message, "subtype": "task_started", "description": event.description, "task_type": "agent"}
        return {**message, "subtype": "task_notification", "status": event.status, "output_file": event.output_path,
                "summary": event.summary, "usage": dict(event.usage)}

    def _request(self, parent: str | None) -> _Request:
        request = self._requests.get(parent)
        if request is None:
            request = self._requests[parent] = _Request(self.session.model.name)
        return request

    def _assistant(self, request: _Request, content: list[dict[str, Any]], parent: str | None) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "id": request.id,
                "type": "message",
                "role": "assistant",
                "model": request.model,
                "content": content,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": dict(request.usage),
            },
            "parent_tool_use_id": parent,
            "session_id": self.session.session_id,
            "uuid": _uuid(),
        }

    def _block(self, event: ev.BlockCompleted) -> None:
        parent = event.parent_tool_use_id
        request = self._request(parent)
        block = event.block
        if self.include_partial:
            if event.index not in request.open:
                start = _empty_block(block)
                start_event = {"type": "content_block_start", "index": event.index, "content_block": start}
                self._stream_event(parent, start_event)
                if block.get("type") == "tool_use":
                    delta = {"type": "input_json_delta", "partial_json": _json(block.get("input", {}))}
                    self._stream_event(parent, {"type": "content_block_delta", "index": event.index, "delta": delta})
            request.open.discard(event.index)
            self._stream_event(parent, {"type": "content_block_stop", "index": event.index})
        self.emit(self._assistant(request, [block], parent))

    def _discarded(self, event: ev.AttemptDiscarded) -> None:
        """Assistant lines already printed for an attempt that is not part of the
        conversation (retried, failed over, or asked again with a larger limit):
        name their message id, so a reader can drop them."""
        request = self._requests.get(event.parent_tool_use_id)
        if request is None:
            return
        self.emit(
            {
                "type": "system",
                "subtype": "attempt_discarded",
                "message_id": request.id,
                "reason": event.reason,
                "attempt": event.attempt,
                "parent_tool_use_id": event.parent_tool_use_id,
                "session_id": self.session.session_id,
                "uuid": _uuid(),
            }
        )

    def _tool_result(self, event: ev.ToolFinished) -> None:
        block = event.result
        if block is None:
            return
        self.emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "parent_tool_use_id": event.parent_tool_use_id,
                "session_id": self.session.session_id,
                "uuid": _uuid(),
            }
        )

    def _usage(self, event: ev.Usage) -> None:
        parent = event.parent_tool_use_id
        request = self._request(parent)
        usage = {
            "input_tokens": event.input_tokens,
            "cache_creation_input_tokens": event.cache_creation_input_tokens,
            "cache_read_input_tokens": event.cache_read_input_tokens,
            "output_tokens": event.output_tokens,
        }
        request.usage = usage
        if not self.include_partial:
            return
        if not request.started:
            # The first usage of a request comes from its message_start.
            request.started = True
            message = {
                "id": request.id,
                "type": "message",
                "role": "assistant",
                "model": request.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            self._stream_event(parent, {"type": "message_start", "message": message})
            return
        # The second comes once the stream ended (message_delta + message_stop).
        delta = {"stop_reason": None, "stop_sequence": None}
        output = {"output_tokens": event.output_tokens}
        self._stream_event(parent, {"type": "message_delta", "delta": delta, "usage": output})
        self._stream_event(parent, {"type": "message_stop"})

    def _delta(self, event: ev.TextDelta | ev.ThinkingDelta) -> None:
        parent = event.parent_tool_use_id
        request = self._request(parent)
        thinking = type(event) is ev.ThinkingDelta
        if event.index not in request.open:
            request.open.add(event.index)
            start = {"type": "thinking", "thinking": "", "signature": ""} if thinking else {"type": "text", "text": ""}
            self._stream_event(parent, {"type": "content_block_start", "index": event.index, "content_block": start})
        if thinking:
            delta = {"type": "thinking_delta", "thinking": event.text}
        else:
            delta = {"type": "text_delta", "text": event.text}
        self._stream_event(parent, {"type": "content_block_delta", "index": event.index, "delta": delta})

    def _stream_event(self, parent: str | None, event: dict[str, Any]) -> None:
        self.emit(
            {
                "type": "stream_event",
                "event": event,
                "parent_tool_use_id": parent,
                "session_id": self.session.session_id,
                "uuid": _uuid(),
            }
        )


def _empty_block(block: dict[str, Any]) -> dict[str, Any]:
    """A completed block as its `content_block_start` announced it."""
    kind = block.get("type")
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}}
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    return dict(block)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
