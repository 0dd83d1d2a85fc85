"""StreamingToolExecutor: runs tools while the model is still streaming (docs/architecture.md §4).

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
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...tools.base import Progress, TodoList, Tool, ToolContext, ToolResult, one_line, validate_input
from .. import events as ev
from ..bus import child_emitter
from ..hooks import HookOutcome, HookRunner, context_text, hook_label, permission_suggestions, rules_to_add
from ..messages import REJECT_MESSAGE, tool_result_block, valid_utf8
from ..permissions.policy import Decision, PermissionAnswer, PermissionPolicy

INTERRUPTED_BY_USER = "Interrupted by user"
# The policy's refusals made only because nobody could be asked (print mode, dontAsk).
_UNANSWERED = ("non_interactive", "dont_ask")
# Bounds memory only: before a request, the context pipeline (engine/context/pipeline.py) saves
# results over their tool's cap to a file and sends a preview and the path instead.
RESULT_CHAR_CAP = 2_000_000
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
    # A PreToolUse hook's `updatedInput`: what the tool runs with (the history keeps the model's input).
    updated_input: dict[str, Any] | None = None
    # Hook context for the model, appended to this tool's result.
    hook_context: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.block["id"]

    @property
    def name(self) -> str:
        return self.block["name"]

    @property
    def input(self) -> dict[str, Any]:
        if self.updated_input is not None:
            return self.updated_input
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
    # What tool durations are measured with: front ends show them, and tests step a manual clock.
    clock: Callable[[], float] = time.monotonic
    # Awaited just before each tool runs: the session waits there for the prompt's checkpoint of
    # the files, taken in a thread of its own (engine/checkpoints.py).
    before_tool: Callable[[], Awaitable[None]] | None = None


class StreamingToolExecutor:
    def __init__(
        self,
        tools: dict[str, Tool],
        *,
        policy: PermissionPolicy,
        emit: Callable[[ev.Event], None],
        make_context: Callable[[str], ToolContext],
        options: ExecutorOptions | None = None,
        hooks: HookRunner | None = None,
    ) -> None:
        self._tools = tools
        self._policy = policy
        self._make_context = make_context
        self._options = options or ExecutorOptions()
        # A subagent's executor tags what it publishes with the parent's Agent tool_use id.
        self._emit = child_emitter(emit, self._options.parent_tool_use_id)
        self._hooks = hooks
        # Set when a PreToolUse/PostToolUse hook answered `continue: false`: the query stops after these tools.
        self.hook_stop: str | None = None
        self._tracked: list[TrackedTool] = []
        self._changed = asyncio.Event()
        self._sibling_error: str | None = None
        self._aborting = False
        self._abort_reason: str | None = None
        # Set when the person answered a permission request "no" (without feedback): the turn ends.
        self.rejected = False

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
            )
        )
        if "_parse_error" in block:
            self._finish(tracked, f"InputValidationError: {block['_parse_error']}", True, "error")
        elif tool is None:
            self._finish(tracked, f"Error: No such tool available: {tracked.name}", True, "error")
        elif self._sibling_error is not None:
            self._finish(tracked, self._sibling_error, True, "cancelled")
        elif self.rejected:
            self._finish(tracked, REJECT_MESSAGE, True, "rejected")
        self._pump()

    async def results(self) -> list[dict[str, Any]]:
        """Wait for every handed-over tool; their tool_result blocks in block order."""
        while any(t.status != "done" for t in self._tracked):
            self._changed.clear()
            await self._changed.wait()
        return [t.result for t in self._tracked if t.result is not None]

    async def abort(self, grace: float = 5.0, reason: str | None = None) -> list[dict[str, Any]]:
        """Cancel queued and running tools; every tool_use still gets a result.

        `reason` is that result when the loop, not the user, drops the tools (a
        retried stream, a model fallback)."""
        self._aborting = True
        self._abort_reason = reason
        running = []
        for t in self._tracked:
            if t.status == "done":
                continue
            if t.task is None:
                self._finish(t, reason or REJECT_MESSAGE, True, "cancelled" if reason else "rejected")
            else:
                running.append(t.task)
                t.task.cancel()
        if running:
            await asyncio.wait(running, timeout=grace)
        for t in self._tracked:
            if t.status != "done":
                self._finish(t, reason or INTERRUPTED_BY_USER, True, "cancelled")
        return [t.result for t in self._tracked if t.result is not None]

    @property
    def has_tools(self) -> bool:
        return bool(self._tracked)

    @property
    def started_any(self) -> bool:
        """Whether any tool was started (a malformed or unknown one never is)."""
        return any(t.task is not None for t in self._tracked)

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
            t.task.add_done_callback(lambda _task, t=t: self._task_done(t))
            running.append(t)

    def _finish(self, t: TrackedTool, content: Any, is_error: bool, outcome: str, data: dict | None = None) -> None:
        if t.status == "done":
            return
        t.status = "done"
        t.outcome = outcome
        t.finished = self._options.clock()
        # Output of a non-UTF-8 file or command: history and front ends only ever hold valid text.
        content, data = valid_utf8(content), valid_utf8(data)
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
                result=t.result,
            )
        )
        self._changed.set()

    async def _run(self, t: TrackedTool) -> None:
        try:
            await self._run_inner(t)
        except asyncio.CancelledError:
            self._finish(t, self._cancelled_message(), True, "cancelled")
            raise
        except Exception as exc:  # A tool bug becomes an error result; the turn goes on.
            self._finish(t, f"Error: {type(exc).__name__}: {exc}", True, "error")
        finally:
            self._pump()

    def _task_done(self, t: TrackedTool) -> None:
        # A task cancelled before its first step never enters `_run`: it still owes a result.
        if t.status != "done":
            self._finish(t, self._cancelled_message(), True, "cancelled")
            self._pump()

    def _cancelled_message(self) -> str:
        if self._sibling_error and not self._aborting:
            return self._sibling_error
        return self._abort_reason or INTERRUPTED_BY_USER

    async def _run_inner(self, t: TrackedTool) -> None:
        tool = t.tool
        assert tool is not None
        ctx = self._make_context(t.id)
        problem = await validate_input(tool, t.input, ctx)
        if problem is not None:
            self._finish(t, problem, True, "error")
            return
        pre = await self._pre_tool_use(t, tool, ctx)
        if t.status == "done":  # a hook denied or stopped it
            return
        if not await self._permitted(t, tool, ctx, pre):
            return
        if self._options.before_tool is not None:
            await self._options.before_tool()
        t.status = "running"
        t.started = self._options.clock()
        self._emit(ev.ToolStarted(tool_use_id=t.id, name=t.name))
        result: ToolResult | None = None
        async for item in tool.call(t.input, ctx):
            if isinstance(item, Progress):
                self._emit(ev.ToolProgress(tool_use_id=t.id, text=item.text))
            elif isinstance(item, ToolResult):
                result = item
            elif isinstance(item, TodoList):
                # Published through the executor, which tags a subagent's plan with its parent.
                self._emit(ev.TodoUpdated(todos=item.todos))
        if result is None:
            result = ToolResult(f"Error: {t.name} produced no result", is_error=True)
        content = result.content
        if isinstance(content, str) and len(content) > RESULT_CHAR_CAP:
            cut = len(content) - RESULT_CHAR_CAP
            content = content[:RESULT_CHAR_CAP] + f"\n\n... [{cut} characters truncated] ..."
        if isinstance(content, str) and not content:
            content = f"({t.name} completed with no output)"
        if not result.is_error:
            await self._post_tool_use(t, tool, content, result)
        else:
            await self._post_tool_use_failure(t, content, ctx)
        content = _with_context(content, t.hook_context)
        self._finish(t, content, result.is_error, "error" if result.is_error else "done", result.data)
        if result.ends_turn:
            self._reject_rest()
        if result.is_error and t.name == "Bash":
            self._cancel_siblings(t)

    # ------------------------------------------------------------ hooks

    async def _pre_tool_use(self, t: TrackedTool, tool: Tool, ctx: ToolContext) -> HookOutcome | None:
        """PreToolUse hooks: they may deny the call (finishing it here), rewrite its input or settle its permission."""
        fields = {"tool_name": t.name, "tool_input": t.input, "tool_use_id": t.id}
        if self._hooks is None or not self._hooks.has("PreToolUse", fields):
            return None
        parent = self._options.parent_tool_use_id
        outcome = await self._hooks.run("PreToolUse", fields, parent_tool_use_id=parent)
        label = hook_label("PreToolUse", fields)
        if outcome.prevent_continuation:
            self.hook_stop = outcome.stop_reason or f"Stopped by a {label} hook"
            self._finish(t, f"Execution stopped by {label} hook: {self.hook_stop}", True, "rejected")
            return outcome
        if outcome.permission_decision == "deny":
            self._options.denials.append(PermissionDenial(t.name, t.id, t.input))
            reason = outcome.permission_decision_reason or outcome.reason or "no reason given"
            self._finish(t, f"{label} hook denied this tool call: {reason}", True, "rejected")
            return outcome
        if outcome.permission_decision == "allow" and outcome.permission_decision_reason:
            self._emit(
                ev.Notice(
                    kind="hook",
                    message=f"{label} hook allowed the call: {outcome.permission_decision_reason}",
                )
            )
        t.hook_context.extend(context_text(label, c) for c in outcome.additional_context)
        if outcome.updated_input is not None:
            t.updated_input = outcome.updated_input
            problem = await validate_input(tool, t.input, ctx)
            if problem is not None:
                self._finish(t, f"{problem} (in the input a {label} hook rewrote)", True, "error")
        return outcome

    async def _post_tool_use(self, t: TrackedTool, tool: Tool, content: Any, result: ToolResult) -> None:
        """PostToolUse hooks: the tool already ran, so they can only talk to the model or stop the query."""
        fields: dict[str, Any] = {"tool_name": t.name, "tool_input": t.input, "tool_use_id": t.id}
        if self._hooks is None or not self._hooks.has("PostToolUse", fields):
            return
        text = content if isinstance(content, str) else _blocks_text(content)
        respond = getattr(tool, "hook_response", None)  # a tool outside BaseTool may not have one
        fields["tool_response"] = respond(t.input, result, text) if respond else {"result": text, **result.data}
        await self._after_tool("PostToolUse", t, fields)

    async def _post_tool_use_failure(self, t: TrackedTool, content: Any, ctx: ToolContext) -> None:
        """PostToolUseFailure hooks: the call failed (or was interrupted); they may talk to the model."""
        fields: dict[str, Any] = {"tool_name": t.name, "tool_input": t.input, "tool_use_id": t.id}
        if self._hooks is None or not self._hooks.has("PostToolUseFailure", fields):
            return
        fields["error"] = content if isinstance(content, str) else _blocks_text(content)
        fields["is_interrupt"] = ctx.abort.is_set()
        await self._after_tool("PostToolUseFailure", t, fields)

    async def _after_tool(self, event: str, t: TrackedTool, fields: dict[str, Any]) -> None:
        assert self._hooks is not None
        outcome = await self._hooks.run(event, fields, parent_tool_use_id=self._options.parent_tool_use_id)
        label = hook_label(event, fields)
        if outcome.blocked:
            t.hook_context.append(f"{label} hook feedback:\n{outcome.reason}")
        t.hook_context.extend(context_text(label, c) for c in outcome.additional_context)
        if outcome.prevent_continuation:
            self.hook_stop = outcome.stop_reason or f"Stopped by a {label} hook"

    async def _permitted(self, t: TrackedTool, tool: Tool, ctx: ToolContext, pre: HookOutcome | None = None) -> bool:
        """Whether the call may run: the policy with the PreToolUse hook's say, then the person.

        What the decision was made on is pinned (`ctx.pinned`) before any prompt waits: a file tool
        then writes where the policy looked, or refuses if a folder on the way was swapped since."""
        decision = self._policy.decide_call(tool, t.input, cwd=ctx.cwd, hook=pre)
        if decision.behavior == "ask" and self.rejected:
            # The person already said no in this turn: do not ask again.
            self._finish(t, REJECT_MESSAGE, True, "rejected")
            return False
        unanswered = decision.behavior == "deny" and decision.reason in _UNANSWERED
        hooked = await self._permission_request_hooks(t, decision) if decision.behavior == "ask" or unanswered \
            else None
        if decision.behavior == "deny" and hooked is None:
            self._options.denials.append(PermissionDenial(t.name, t.id, t.input))
            self._finish(t, decision.message or REJECT_MESSAGE, True, "rejected")
            return False
        pin = getattr(tool, "pin", None)  # a tool outside BaseTool may not have one
        ctx.pinned = pin(t.input, ctx, decision.resolved) if pin is not None else None
        if decision.behavior == "allow":
            return True
        answer = hooked or await self._ask(t, tool, decision)
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
            )
        )
        if answer.behavior != "allow" and hooked is not None:
            self._options.denials.append(PermissionDenial(t.name, t.id, t.input))
        if answer.behavior == "allow":
            if answer.updated_input is not None and answer.updated_input != t.input:
                t.updated_input = answer.updated_input
                problem = await validate_input(tool, t.input, ctx)
                if problem is not None:
                    self._finish(t, f"{problem} (in the input the permission answer rewrote)", True, "error")
                    return False
                # The rules still apply to the new input, and the pin follows where it now points.
                again = self._policy.decide_call(tool, t.input, cwd=ctx.cwd, hook=pre)
                # A hook answered where nobody could: only a refusal of its own kind stands.
                if again.behavior == "deny" and not (hooked and again.reason in _UNANSWERED):
                    self._options.denials.append(PermissionDenial(t.name, t.id, t.input))
                    self._finish(t, again.message or REJECT_MESSAGE, True, "rejected")
                    return False
                ctx.pinned = pin(t.input, ctx, again.resolved) if pin is not None else None
            return True
        if answer.message:
            # A program's deny: its words are the result, and the turn goes on.
            self._finish(t, answer.message, True, "rejected")
            return False
        message = REJECT_MESSAGE
        if answer.feedback:
            message = (
                "The user doesn't want to proceed with this tool use. The tool use was rejected "
                "(eg. if it was a file edit, the new_string was NOT written to the file). "
                f"To tell you how to proceed, the user said:\n{answer.feedback}"
            )
        self._finish(t, message, True, "rejected")
        if not answer.feedback:
            self._reject_rest()
        return False

    async def _permission_request_hooks(self, t: TrackedTool, decision: Decision) -> PermissionAnswer | None:
        """PermissionRequest hooks, where a person would be asked (or nobody could be): their
        allow or deny answers for the person; None when none decided."""
        fields: dict[str, Any] = {"tool_name": t.name, "tool_input": t.input}
        if self._hooks is None or not self._hooks.has("PermissionRequest", fields):
            return None
        fields["permission_suggestions"] = permission_suggestions(decision.suggested_rule)
        parent = self._options.parent_tool_use_id
        outcome = await self._hooks.run("PermissionRequest", fields, parent_tool_use_id=parent)
        verdict = outcome.permission_request
        if verdict is None:
            return None
        label = hook_label("PermissionRequest", fields)
        if verdict["behavior"] == "allow":
            for rule, destination in rules_to_add(verdict.get("updatedPermissions")):
                with contextlib.suppress(ValueError, OSError):
                    if destination == "localSettings":
                        self._policy.remember(rule)
                    else:
                        self._policy.add_rule(rule, source="session")
            updated = verdict.get("updatedInput")
            return PermissionAnswer("allow", updated_input=updated if isinstance(updated, dict) else None)
        if verdict.get("interrupt") is True:
            self.rejected = True  # as a person's plain no: nothing else of this turn starts
        message = verdict.get("message")
        return PermissionAnswer("deny", message=f"{label} hook denied this tool call: "
                                + (message if isinstance(message, str) and message else "no reason given"))

    async def _ask(self, t: TrackedTool, tool: Tool, decision: Decision) -> PermissionAnswer:
        """Publish the question (with the change's diff) and wait for the front end's answer."""
        t.status = "awaiting_permission"
        if self._hooks is not None:
            self._hooks.notify(
                f"agent-tui needs your permission to use {t.name}", parent_tool_use_id=self._options.parent_tool_use_id
            )
        try:
            diff = valid_utf8(await tool.permission_preview(t.input, self._make_context(t.id)))
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
            )
        )
        try:
            return await future
        except asyncio.CancelledError:
            if not future.done():
                future.cancel()
            # No feedback: the person said nothing (the turn's `interrupted` event says what happened).
            self._emit(ev.PermissionResolved(tool_use_id=t.id, tool_name=t.name, behavior="deny"))
            raise

    def _reject_rest(self) -> None:
        """After a plain "no": nothing else of this turn starts; tools already running finish."""
        self.rejected = True
        for t in self._tracked:
            if t.status == "queued":
                self._finish(t, REJECT_MESSAGE, True, "rejected")
            elif t.status == "awaiting_permission" and t.task is not None:
                self._finish(t, REJECT_MESSAGE, True, "rejected")
                t.task.cancel()

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


def _with_context(content: Any, extra: list[str]) -> Any:
    """A tool result with hook feedback and context after it, for the model."""
    if not extra:
        return content
    if isinstance(content, str):
        return "\n\n".join([content, *extra])
    return [*content, *({"type": "text", "text": text} for text in extra)]
