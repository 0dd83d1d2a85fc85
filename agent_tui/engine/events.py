"""The bus vocabulary: every event the loop, the executor and the session publish.

Event names are a contract (docs/architecture.md §2): `stream-events` prints them with `"type"`,
the transcript store persists them and the TUI bridge turns them into Textual
messages.  Each event is a frozen dataclass whose `to_dict()` is JSON-safe.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    type: ClassVar[str] = "event"
    # Set on events of a subagent: the id of the parent's Agent tool_use.
    parent_tool_use_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(
                f.name for f in dataclasses.fields(self) if not f.metadata.get("transient")
            )
        data: dict[str, Any] = {"type": self.type}
        for name in names:
            value = getattr(self, name)
            if value is None and name == "parent_tool_use_id":
                continue
            data[name] = value
        return data


# Serialisable field names per event class (to_dict runs once per streamed delta).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _transient() -> Any:
    """A field carried in-process only (futures), left out of `to_dict()`."""
    return field(default=None, metadata={"transient": True}, compare=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionStarted(Event):
    type: ClassVar[str] = "session_started"
    session_id: str
    model: str
    cwd: str
    permission_mode: str
    tools: list[str]
    offline: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage(Event):
    type: ClassVar[str] = "user_message"
    text: str
    queued: bool = False
    # The prompt's id (a program's own, or a new uuid4): what `rewind_files` names.
    uuid: str = ""
    # No one typed it: a turn that carries background agents' reports to the model.
    notification: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestStarted(Event):
    type: ClassVar[str] = "request_started"
    turn: int
    model: str
    max_tokens: int
    attempt: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class AttemptDiscarded(Event):
    """What an attempt streamed (text, thinking) is not part of the conversation:
    the request failed and is retried, fails over, gives up, or a cut-off answer
    is asked again with a larger limit.  Front ends remove or mark that output.
    An attempt whose tools started is never discarded: it is kept up to the failure."""

    type: ClassVar[str] = "attempt_discarded"
    turn: int
    attempt: int
    # "retry" | "fallback" | "escalation" | "error"
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    index: int
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    index: int
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BlockCompleted(Event):
    type: ClassVar[str] = "block_completed"
    index: int
    block: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolQueued(Event):
    type: ClassVar[str] = "tool_queued"
    tool_use_id: str
    name: str
    input: dict[str, Any]
    summary: str
    concurrency_safe: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolStarted(Event):
    type: ClassVar[str] = "tool_started"
    tool_use_id: str
    name: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolProgress(Event):
    type: ClassVar[str] = "tool_progress"
    tool_use_id: str
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolFinished(Event):
    type: ClassVar[str] = "tool_finished"
    tool_use_id: str
    name: str
    is_error: bool
    preview: str
    duration: float
    # "done" | "error" | "cancelled" | "rejected"
    status: str = "done"
    # Richer data for front ends: full output, unified diff, line counts.
    data: dict[str, Any] = field(default_factory=dict)
    # The tool_result block the model receives (in-process: print mode's stream-json prints it).
    result: dict[str, Any] | None = _transient()


@dataclass(frozen=True, kw_only=True, slots=True)
class PermissionRequested(Event):
    """A tool call waits for a person.  The front end resolves `future` with a
    `PermissionAnswer`; the loop never knows which front end answered."""

    type: ClassVar[str] = "permission_requested"
    tool_use_id: str
    tool_name: str
    input: dict[str, Any]
    message: str
    danger: str | None = None
    suggested_rule: str | None = None
    diff: str | None = None
    future: asyncio.Future[Any] | None = _transient()


@dataclass(frozen=True, kw_only=True, slots=True)
class PermissionResolved(Event):
    type: ClassVar[str] = "permission_resolved"
    tool_use_id: str
    tool_name: str
    # "allow" | "deny"
    behavior: str
    remember: bool = False
    rule: str | None = None
    feedback: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage(Event):
    type: ClassVar[str] = "usage"
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    context_tokens: int
    context_window: int
    auto_compact_threshold: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Notice(Event):
    type: ClassVar[str] = "notice"
    # "retry" | "fallback" | "escalation" | "compaction" | "hook" | "error" | "info"
    kind: str
    message: str
    # Notices with the same id are one line that front ends update in place (the retries of a request).
    id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Compaction(Event):
    type: ClassVar[str] = "compaction"
    tokens_before: int
    tokens_after: int
    trigger: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionProgress(Event):
    """The summary of a compaction is being written: its output so far (estimated)."""

    type: ClassVar[str] = "compaction_progress"
    trigger: str
    output_tokens: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Interrupted(Event):
    type: ClassVar[str] = "interrupted"
    # "streaming" | "tools"
    during: str


@dataclass(frozen=True, kw_only=True, slots=True)
class QueryFinished(Event):
    type: ClassVar[str] = "query_finished"
    terminal_reason: str
    turns: int
    usage: dict[str, int]
    result: str
    is_error: bool = False
    error: str | None = None
    duration_ms: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class TodoUpdated(Event):
    """The agent's plan after a TodoWrite: the whole list, in order."""

    type: ClassVar[str] = "todo_updated"
    # [{"content": str, "status": "pending" | "in_progress" | "completed", "activeForm": str, "id"?: str}]
    todos: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModeChanged(Event):
    """`Session.set_permission_mode`: the permission mode now in force."""

    type: ClassVar[str] = "mode_changed"
    mode: str
    previous: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelChanged(Event):
    """`Session.set_model`: the model the next request uses (the system prompt names it)."""

    type: ClassVar[str] = "model_changed"
    model: str
    previous: str


@dataclass(frozen=True, kw_only=True, slots=True)
class McpServersChanged(Event):
    """`Session.set_mcp_servers`: the configured MCP servers (they connect before the next prompt)."""

    type: ClassVar[str] = "mcp_servers_changed"
    servers: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class BackgroundTask(Event):
    """A subagent the Agent tool started with `run_in_background`: it started, or it ended (its
    report then reaches the model at its next turn)."""

    type: ClassVar[str] = "background_task"
    # The Agent call's tool_use id (its own events carry it as parent_tool_use_id).
    task_id: str
    description: str
    status: Literal["running", "completed", "failed", "stopped"]
    # The file its progress and report are written to (the model may Read it).
    output_path: str
    summary: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ElicitationRequested(Event):
    """An MCP server asks the person for values: `schema` is the form (JSON schema; form mode) or
    `url` the page to open (URL mode).  Published only when a front end said it shows such forms;
    it resolves `future` with an `ElicitationAnswer` (engine/mcp_features.py)."""

    type: ClassVar[str] = "elicitation_requested"
    server: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None
    future: asyncio.Future[Any] | None = _transient()


@dataclass(frozen=True, kw_only=True, slots=True)
class ElicitationResolved(Event):
    """How an elicitation was answered: "accept", "decline" or "cancel" (the turn was interrupted,
    or the person closed the form)."""

    type: ClassVar[str] = "elicitation_resolved"
    server: str
    action: str


ALL_EVENTS: tuple[type[Event], ...] = (
    SessionStarted,
    UserMessage,
    RequestStarted,
    AttemptDiscarded,
    TextDelta,
    ThinkingDelta,
    BlockCompleted,
    ToolQueued,
    ToolStarted,
    ToolProgress,
    ToolFinished,
    PermissionRequested,
    PermissionResolved,
    Usage,
    Notice,
    Compaction,
    CompactionProgress,
    Interrupted,
    QueryFinished,
    TodoUpdated,
    ModeChanged,
    ModelChanged,
    McpServersChanged,
    BackgroundTask,
    ElicitationRequested,
    ElicitationResolved,
)

# Events a slow subscriber may receive merged; every other event is delivered as published.
COALESCIBLE = (TextDelta, ThinkingDelta)
