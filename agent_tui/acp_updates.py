"""Bus events as ACP `session/update`s (docs/architecture.md §8): one translation for a live prompt
and for the replay of a stored session (`session/load`).

text and thinking deltas -> `agent_message_chunk` / `agent_thought_chunk`; a tool call's life
(`tool_queued` -> `tool_started` -> `tool_finished`) -> `tool_call` (pending) and `tool_call_update`s
(in_progress, then completed or failed), addressed by the tool_use id, with its kind, its output as
text, a `diff` for Write / Edit / MultiEdit and the paths it touches; TodoWrite's plan -> `plan`;
`mode_changed` -> `current_mode_update`; `usage` -> `usage_update`.  A subagent's tool calls are
shown (their permission requests name them); its text is its Agent call's result.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from acp import schema
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_current_mode,
    update_plan,
    update_tool_call,
    update_user_message_text,
)

from .engine import events as ev

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
Update = Any  # one of the schema's session update models

_KINDS: dict[str, ToolKind] = {
    "Read": "read", "Write": "edit", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute", "Glob": "search", "Grep": "search",
    "WebFetch": "fetch", "WebSearch": "fetch", "TodoWrite": "think", "Agent": "think", "Task": "think",
    "ExitPlanMode": "switch_mode",
}
_BASH_KINDS: dict[str, ToolKind] = {"rm": "delete", "rmdir": "delete", "unlink": "delete", "mv": "move"}
FILE_CHANGE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})
# What a tool call's output may put in one update (the model got the whole result).
MAX_CONTENT_CHARS = 50_000
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def tool_kind(name: str, input: dict[str, Any]) -> ToolKind:
    """ACP's kind of a call: Bash's `rm` is a delete and `mv` a move; an unknown tool is other."""
    if name == "Bash":
        words = str(input.get("command", "")).split()
        return _BASH_KINDS.get(words[0], "execute") if words else "execute"
    return _KINDS.get(name, "other")


def tool_title(name: str, summary: str) -> str:
    return f"{name} {summary}".strip() if summary else name


def _path(input: dict[str, Any], cwd: Path) -> str | None:
    raw = input.get("file_path") or input.get("notebook_path") or input.get("path")
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() else cwd / path)


def locations(name: str, input: dict[str, Any], cwd: Path, line: int | None = None) -> list[schema.ToolCallLocation]:
    """The file (and line) a call reads or changes, for the editor to follow."""
    path = _path(input, cwd)
    if path is None:
        return []
    if line is None and name == "Read" and isinstance(input.get("offset"), int):
        line = input["offset"]
    return [schema.ToolCallLocation(path=path, line=line)]


def input_diffs(name: str, input: dict[str, Any], cwd: Path) -> list[schema.FileEditToolCallContent]:
    """The change a Write / Edit / MultiEdit asks for, read from its input (before it runs)."""
    path = _path(input, cwd)
    if path is None or name not in FILE_CHANGE_TOOLS:
        return []
    if name == "Write" and isinstance(input.get("content"), str):
        return [tool_diff_content(path, input["content"])]
    edits = [input] if name == "Edit" else input.get("edits") if isinstance(input.get("edits"), list) else []
    return [tool_diff_content(path, str(e.get("new_string", "")), str(e.get("old_string", "")) or None)
            for e in edits if isinstance(e, dict)]


def unified_diffs(diff: str, path: str, *, created: bool = False) -> list[schema.FileEditToolCallContent]:
    """A unified diff (what the engine shows for a change) as ACP diffs, one per hunk."""
    out: list[schema.FileEditToolCallContent] = []
    old: list[str] | None = None
    new: list[str] = []

    def close() -> None:
        if old is not None:
            out.append(tool_diff_content(path, "".join(new), None if created else "".join(old)))

    for line in diff.splitlines(keepends=True):
        if _HUNK.match(line):
            close()
            old, new = [], []
        elif old is None or line.startswith("\\"):
            continue  # the ---/+++ header, "\ No newline at end of file"
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    close()
    return out


def first_changed_line(diff: str) -> int | None:
    match = next((m for m in map(_HUNK.match, diff.splitlines()) if m), None)
    return int(match.group(3)) if match else None


def result_content(event: ev.ToolFinished) -> list[Any]:
    """A finished call's output as ACP content: the diff of a change, else the tool_result's text
    (and images), else the preview (a replayed call has no result)."""
    diff = event.data.get("diff")
    path = event.data.get("path")
    if isinstance(diff, str) and diff and isinstance(path, str) and not event.is_error:
        return unified_diffs(diff, path, created=bool(event.data.get("created")))
    blocks: list[Any] = []
    content = (event.result or {}).get("content") if event.result else event.preview
    for block in [content] if isinstance(content, str) else content or []:
        if isinstance(block, str):
            text = block
        elif block.get("type") == "text":
            text = str(block.get("text", ""))
        elif block.get("type") == "image" and isinstance(block.get("source"), dict):
            source = block["source"]
            blocks.append(tool_content(schema.ImageContentBlock(
                type="image", data=str(source.get("data", "")), mime_type=str(source.get("media_type", "")))))
            continue
        else:
            continue
        if text:
            clipped = text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "\n…"
            blocks.append(tool_content(text_block(clipped)))
    return blocks


class UpdateTranslator:
    """Bus events of one session -> ACP session updates, in order (`updates(event)`)."""

    def __init__(self, cwd: Path, *, cost: Callable[[], float | None] = lambda: None) -> None:
        self.cwd = cwd
        self._cost = cost
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._summaries: dict[str, str] = {}
        self._progress: dict[str, str] = {}
        # A replay shows the person's prompts too; a live prompt is the client's own.
        self.replaying = False

    def updates(self, event: ev.Event) -> list[Update]:
        kind = type(event)
        sub = event.parent_tool_use_id is not None
        if kind is ev.TextDelta and not sub:
            return [update_agent_message_text(event.text)] if event.text else []
        if kind is ev.ThinkingDelta and not sub:
            return [update_agent_thought_text(event.text)] if event.text else []
        if kind is ev.UserMessage and self.replaying and not sub:
            return [update_user_message_text(event.text)]
        if kind is ev.ToolQueued:
            return [self._queued(event)]
        if kind is ev.ToolStarted:
            return [update_tool_call(event.tool_use_id, status="in_progress")]
        if kind is ev.ToolProgress:
            return self._progress_update(event)
        if kind is ev.ToolFinished:
            return [self._finished(event)]
        if kind is ev.TodoUpdated and not sub:
            return [update_plan(schema.PlanEntry(content=str(t.get("content", "")), priority="medium",
                                                 status=t.get("status", "pending")) for t in event.todos
                                if t.get("status") in ("pending", "in_progress", "completed"))]
        if kind is ev.ModeChanged:
            return [update_current_mode(event.mode)]
        if kind is ev.Usage and not sub:
            return [self._usage(event)]
        return []

    def summary(self, tool_use_id: str) -> str:
        """The one-line summary of a call seen queued ("" for one not seen)."""
        return self._summaries.get(tool_use_id, "")

    def _queued(self, event: ev.ToolQueued) -> Update:
        self._calls[event.tool_use_id] = (event.name, event.input)
        self._summaries[event.tool_use_id] = event.summary
        return start_tool_call(
            event.tool_use_id, tool_title(event.name, event.summary), kind=tool_kind(event.name, event.input),
            status="pending", content=input_diffs(event.name, event.input, self.cwd) or None,
            locations=locations(event.name, event.input, self.cwd) or None, raw_input=event.input)

    def _progress_update(self, event: ev.ToolProgress) -> list[Update]:
        text = (self._progress.get(event.tool_use_id, "") + event.text + "\n")[-MAX_CONTENT_CHARS:]
        self._progress[event.tool_use_id] = text
        return [update_tool_call(event.tool_use_id, content=[tool_content(text_block(text))])]

    def _finished(self, event: ev.ToolFinished) -> Update:
        name, input = self._calls.pop(event.tool_use_id, (event.name, {}))
        self._summaries.pop(event.tool_use_id, None)
        self._progress.pop(event.tool_use_id, None)
        failed = event.is_error or event.status in ("error", "cancelled", "rejected")
        diff = event.data.get("diff")
        line = first_changed_line(diff) if isinstance(diff, str) else None
        return update_tool_call(
            event.tool_use_id, status="failed" if failed else "completed", content=result_content(event) or None,
            locations=locations(name, input, self.cwd, line) or None)

    def _usage(self, event: ev.Usage) -> Update:
        cost = self._cost()
        return schema.UsageUpdate(
            session_update="usage_update", used=event.context_tokens, size=event.context_window,
            cost=schema.Cost(amount=cost, currency="USD") if cost is not None else None)

    def permission_call(self, event: ev.PermissionRequested, title: str) -> schema.ToolCallUpdate:
        """The call a permission request is about, with the change it would make."""
        path = _path(event.input, self.cwd)
        diffs = unified_diffs(event.diff, path) if event.diff and path else []
        return schema.ToolCallUpdate(
            tool_call_id=event.tool_use_id, title=title, kind=tool_kind(event.tool_name, event.input),
            status="pending", content=diffs or input_diffs(event.tool_name, event.input, self.cwd) or None,
            locations=locations(event.tool_name, event.input, self.cwd) or None, raw_input=event.input)
