"""StreamingToolExecutor: runs tools while the model is still streaming (DESIGN §4).

The loop hands over each `tool_use` block at its `content_block_stop`.  A tool
starts at once when nothing runs, or when it and everything running are
concurrency-safe; an unsafe tool waits for the running ones and is a barrier
for those queued behind it.  Results come back in block order whatever order
the tools finished in.  A failing Bash cancels its siblings; an abort cancels
everything and still gives every handed-over tool_use a result, so the
history stays valid.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tools.base import Progress, Tool, ToolContext, ToolResult, one_line, validate_schema
from . import events as ev
from .messages import REJECT_MESSAGE, tool_result_block
from .permissions import PermissionAnswer, PermissionPolicy

INTERRUPTED_BY_USER = "Interrupted by user"
# Generic result cap until the context pipeline saves large results to disk.
RESULT_CHAR_CAP = 100_000
PREVIEW_CHARS = 300


@dataclass(eq=False)
class TrackedTool:
    index: int
    block: dict[str, Any]
    tool: Tool | None
    concurrency_safe: bool
    status: str = "queued"  # queued | awaiting_permission | running | done
    task: asyncio.Task[None] | None = None
    result: dict[str, Any] | None = None
    started: float = 0.0
    finished: float = 0.0
    outcome: str = ""  # done | error | cancelled | rejected

    @property
    def id(self) -> str:
        return self.block["id"]

    @property
    def name(self) -> str:
        return self.block["name"]

    @property
    def input(self) -> dict[str, Any]:
        return self.block.get("input") or {}


@dataclass
class PermissionDenial:
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "tool_use_id": self.tool_use_id, "tool_input": self.tool_input}


@dataclass
class ExecutorOptions:
    max_concurrency: int = 10
    parent_tool_use_id: str | None = None
    denials: list[PermissionDenial] = field(default_factory=list)


class StreamingToolExecutor:
    def __init__(
        self,
        tools: dict[str, Tool],
        *,
        policy: PermissionPolicy,
        emit: Callable[[ev.Event], None],
        make_context: Callable[[str], ToolContext],
        options: ExecutorOptions | None = None,
    ) -> None:
        self._tools = tools
        self._policy = policy
        self._emit = emit
        self._make_context = make_context
        self._options = options or ExecutorOptions()
        self._tracked: list[TrackedTool] = []
        self._changed = asyncio.Event()
        self._sibling_error: str | None = None
        self._aborting = False

    # ------------------------------------------------------------ public

    @property
    def tracked(self) -> list[TrackedTool]:
        return list(self._tracked)

    def add_tool(self, block: dict[str, Any]) -> None:
        """Take a completed tool_use block from the stream; start it if it may run now."""
        tool = self._tools.get(block["name"])
        safe = False
        if tool is not None and "_parse_error" not in block:
            try:
                safe = bool(tool.is_concurrency_safe(block.get("input") or {}))
            except Exception:
                safe = False
        tracked = TrackedTool(len(self._tracked), block, tool, safe)
        self._tracked.append(tracked)
        self._emit(
            ev.ToolQueued(
                tool_use_id=tracked.id,
                name=tracked.name,
                input=tracked.input,
                summary=_summary(tool, tracked.input),
                concurrency_safe=safe,
                parent_tool_use_id=self._options.parent_tool_use_id,
            )
        )
        if "_parse_error" in block:
            self._finish(tracked, f"InputValidationError: {block['_parse_error']}", True, "error")
        elif tool is None:
            self._finish(tracked, f"Error: No such tool available: {tracked.name}", True, "error")
        elif self._sibling_error is not None:
            self._finish(tracked, self._sibling_error, True, "cancelled")
        self._pump()

    async def results(self) -> list[dict[str, Any]]:
        """Wait for every handed-over tool; their tool_result blocks in block order."""
        while any(t.status != "done" for t in self._tracked):
            self._changed.clear()
            await self._changed.wait()
        return [t.result for t in self._tracked if t.result is not None]

    async def abort(self, grace: float = 5.0) -> list[dict[str, Any]]:
        """Cancel queued and running tools; every tool_use still gets a result."""
        self._aborting = True
        running = []
        for t in self._tracked:
            if t.status == "done":
                continue
            if t.task is None:
                self._finish(t, REJECT_MESSAGE, True, "rejected")
            else:
                running.append(t.task)
                t.task.cancel()
        if running:
            await asyncio.wait(running, timeout=grace)
        for t in self._tracked:
            if t.status != "done":
                self._finish(t, INTERRUPTED_BY_USER, True, "cancelled")
        return [t.result for t in self._tracked if t.result is not None]

    @property
    def has_tools(self) -> bool:
        return bool(self._tracked)

    # ------------------------------------------------------------ scheduling

    def _pump(self) -> None:
        if self._aborting:
            return
        running = [t for t in self._tracked if t.status in ("running", "awaiting_permission")]
        for t in self._tracked:
            if t.status != "queued":
                continue
            if len(running) >= self._options.max_concurrency:
                break
            may_start = not running or (t.concurrency_safe and all(r.concurrency_safe for r in running))
            if not may_start:
                # Keep block order: an unsafe tool is a barrier, and nothing overtakes it.
                break
            t.status = "running"
            t.task = asyncio.get_running_loop().create_task(self._run(t), name=f"tool:{t.name}:{t.id}")
            running.append(t)

    def _finish(self, t: TrackedTool, content: Any, is_error: bool, outcome: str, data: dict | None = None) -> None:
        if t.status == "done":
            return
        t.status = "done"
        t.outcome = outcome
        t.finished = time.monotonic()
        t.result = tool_result_block(t.id, content, is_error)
        text = content if isinstance(content, str) else _blocks_text(content)
        self._emit(
            ev.ToolFinished(
                tool_use_id=t.id,
                name=t.name,
                is_error=is_error,
                preview=text[:PREVIEW_CHARS],
                duration=round(t.finished - t.started, 4) if t.started else 0.0,
                status=outcome,
                data=data or {},
                parent_tool_use_id=self._options.parent_tool_use_id,
            )
        )
        self._changed.set()

    async def _run(self, t: TrackedTool) -> None:
        try:
            await self._run_inner(t)
        except asyncio.CancelledError:
            message = self._sibling_error if self._sibling_error and not self._aborting else INTERRUPTED_BY_USER
            self._finish(t, message, True, "cancelled")
            raise
        except Exception as exc:  # A tool bug becomes an error result; the turn goes on.
            self._finish(t, f"Error: {type(exc).__name__}: {exc}", True, "error")
        finally:
            self._pump()

    async def _run_inner(self, t: TrackedTool) -> None:
        tool = t.tool
        assert tool is not None
        ctx = self._make_context(t.id)
        problem = validate_schema(tool.input_schema, t.input)
        if problem is None:
            problem = await tool.validate(t.input, ctx)
        if problem is not None:
            self._finish(t, problem, True, "error")
            return
        if not await self._permitted(t, tool):
            return
        t.status = "running"
        t.started = time.monotonic()
        self._emit(ev.ToolStarted(tool_use_id=t.id, name=t.name, parent_tool_use_id=self._options.parent_tool_use_id))
        result: ToolResult | None = None
        async for item in tool.call(t.input, ctx):
            if isinstance(item, Progress):
                self._emit(
                    ev.ToolProgress(
                        tool_use_id=t.id, text=item.text, parent_tool_use_id=self._options.parent_tool_use_id
                    )
                )
            elif isinstance(item, ToolResult):
                result = item
        if result is None:
            result = ToolResult(f"Error: {t.name} produced no result", is_error=True)
        content = result.content
        if isinstance(content, str) and len(content) > RESULT_CHAR_CAP:
            cut = len(content) - RESULT_CHAR_CAP
            content = content[:RESULT_CHAR_CAP] + f"\n\n... [{cut} characters truncated] ..."
        if isinstance(content, str) and not content:
            content = f"({t.name} completed with no output)"
        self._finish(t, content, result.is_error, "error" if result.is_error else "done", result.data)
        if result.is_error and t.name == "Bash":
            self._cancel_siblings(t)

    async def _permitted(self, t: TrackedTool, tool: Tool) -> bool:
        decision = self._policy.decide(tool, t.input)
        if decision.behavior == "allow":
            return True
        if decision.behavior == "deny":
            self._options.denials.append(PermissionDenial(t.name, t.id, t.input))
            self._finish(t, decision.message or REJECT_MESSAGE, True, "rejected")
            return False
        t.status = "awaiting_permission"
        diff = None
        preview = getattr(tool, "permission_preview", None)
        if preview is not None:
            try:
                diff = await preview(t.input, self._make_context(t.id))
            except Exception:
                diff = None
        future: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        self._emit(
            ev.PermissionRequested(
                tool_use_id=t.id,
                tool_name=t.name,
                input=t.input,
                message=decision.message,
                danger=decision.danger,
                suggested_rule=decision.suggested_rule,
                diff=diff,
                future=future,
                parent_tool_use_id=self._options.parent_tool_use_id,
            )
        )
        try:
            answer = await future
        except asyncio.CancelledError:
            if not future.done():
                future.cancel()
            self._emit(
                ev.PermissionResolved(
                    tool_use_id=t.id,
                    tool_name=t.name,
                    behavior="deny",
                    feedback="interrupted",
                    parent_tool_use_id=self._options.parent_tool_use_id,
                )
            )
            raise
        rule = decision.suggested_rule if answer.remember and answer.behavior == "allow" else None
        if rule:
            self._policy.remember(rule)
        self._emit(
            ev.PermissionResolved(
                tool_use_id=t.id,
                tool_name=t.name,
                behavior=answer.behavior,
                remember=answer.remember,
                rule=rule,
                feedback=answer.feedback,
                parent_tool_use_id=self._options.parent_tool_use_id,
            )
        )
        if answer.behavior == "allow":
            return True
        message = REJECT_MESSAGE
        if answer.feedback:
            message = (
                "The user doesn't want to proceed with this tool use. The tool use was rejected "
                "(eg. if it was a file edit, the new_string was NOT written to the file). "
                f"To tell you how to proceed, the user said:\n{answer.feedback}"
            )
        self._finish(t, message, True, "rejected")
        return False

    def _cancel_siblings(self, failed: TrackedTool) -> None:
        command = one_line(str(failed.input.get("command", "")), 1000)
        short = command[:40] + ("…" if len(command) > 40 else "")
        self._sibling_error = f"Cancelled: parallel tool call Bash({short}) errored"
        for t in self._tracked:
            if t is failed or t.status == "done":
                continue
            if t.task is not None:
                t.task.cancel()
            else:
                self._finish(t, self._sibling_error, True, "cancelled")


def _summary(tool: Tool | None, input: dict[str, Any]) -> str:
    if tool is None:
        return ""
    try:
        return tool.summarize(input)
    except Exception:
        return ""


def _blocks_text(content: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
