"""Background subagents: the Agent tool's `run_in_background` (docs/architecture.md §5).

The subagent runs as a task of the session's own, beside the conversation: the Agent call returns
at once with its id and the file its progress goes to (the model may Read it), and the turn goes
on.  Esc stops the turn, never a background agent (it has an abort of its own); the session's end
stops it.  When it ends, a `<task-notification>` (Claude Code's shape) waits for the model: the
running query adds it to the next turn's user message, or the next prompt carries it.  Its
events go out on the bus tagged with the Agent call's id, like a subagent's in the foreground.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from xml.sax.saxutils import escape

from ..tools.agent import AgentDefinition
from ..tools.base import ToolContext, ToolResult, one_line
from . import events as ev
from .bus import EventBus
from .permissions.policy import PermissionPolicy

# How long the session's end waits for a stopped agent to close its history.
_STOP_GRACE = 5.0


class _Runner(Protocol):
    bus: EventBus
    policy: PermissionPolicy

    async def run_subagent(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


@dataclass
class BackgroundAgent:
    task_id: str
    description: str
    output_path: Path
    abort: asyncio.Event
    started: float
    status: str = "running"
    task: asyncio.Task[None] | None = None


class BackgroundAgents:
    """The session's background subagents and the notifications they left for the model."""

    def __init__(self, runner: _Runner) -> None:
        self._runner = runner
        self.agents: dict[str, BackgroundAgent] = {}
        self._notifications: list[str] = []

    @property
    def running(self) -> list[BackgroundAgent]:
        return [a for a in self.agents.values() if a.status == "running"]

    @property
    def pending(self) -> int:
        """Notifications not yet given to the model."""
        return len(self._notifications)

    async def wait(self) -> None:
        """Until every background agent running now has ended."""
        tasks = [a.task for a in self.running if a.task is not None]
        if tasks:
            await asyncio.wait(tasks)

    def take_notifications(self) -> list[str]:
        """The notifications not yet given to the model (each is given once)."""
        taken, self._notifications = self._notifications, []
        return taken

    def launch(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Start the subagent in the background; the Agent call's result, at once."""
        task_id = ctx.tool_use_id
        folder = ctx.session_dir / "background" if ctx.session_dir else Path(tempfile.mkdtemp(prefix="agent-tui-"))
        folder.mkdir(parents=True, exist_ok=True)
        output_path = folder / f"agent-{task_id}.md"
        output_path.write_text(f"# Background agent: {input['description']}\n\n", encoding="utf-8")
        # The model reads its progress without being asked about a file outside the project.
        with contextlib.suppress(ValueError):
            self._runner.policy.add_rule(f"Read(/{output_path.as_posix()})", source="session")
        entry = BackgroundAgent(task_id, input["description"], output_path, asyncio.Event(), time.monotonic())
        self.agents[task_id] = entry
        # Its own abort: Esc stops the turn, not this agent.
        child = dataclasses.replace(ctx, abort=entry.abort)
        entry.task = asyncio.ensure_future(self._run(entry, agent, input, child))
        self._runner.bus.publish(ev.BackgroundTask(task_id=task_id, description=entry.description,
                                                   status="running", output_path=str(output_path)))
        text = (f"Async agent launched successfully.\nagentId: {task_id} (internal ID - do not mention to user)\n"
                "The agent is working in the background. You will be notified automatically when it completes; "
                "continue with other work meanwhile and do not duplicate its work.\n"
                f"output_file: {output_path} (its progress so far; Read it if the user asks how it is going)")
        return ToolResult(text, data={"background": True, "output_path": str(output_path), "task_id": task_id})

    async def _run(self, entry: BackgroundAgent, agent: AgentDefinition, input: dict[str, Any],
                   ctx: ToolContext) -> None:
        log = _ProgressLog(entry.output_path, entry.task_id)
        detach = self._runner.bus.add_listener(log)
        try:
            result = await self._runner.run_subagent(agent, input, ctx)
        except Exception as exc:  # a bug in the subagent's run is its failure, not the session's
            result = ToolResult(f"Internal error: {type(exc).__name__}: {exc}", is_error=True)
        finally:
            detach()
        text = result.content if isinstance(result.content, str) else str(result.content)
        entry.status = "stopped" if entry.abort.is_set() else "failed" if result.is_error else "completed"
        log.finish(entry.status, text)
        usage = _usage(result.data, time.monotonic() - entry.started)
        self._notifications.append(notification(entry, text, usage))
        summary = {"completed": "finished", "failed": "failed", "stopped": "was stopped"}[entry.status]
        self._runner.bus.publish(ev.BackgroundTask(
            task_id=entry.task_id, description=entry.description, status=entry.status,  # type: ignore[arg-type]
            output_path=str(entry.output_path), summary=f'Agent "{entry.description}" {summary}', usage=usage))

    async def aclose(self) -> None:
        """The session ends: every background agent stops (each closes its history first)."""
        running = [a for a in self.running if a.task is not None]
        for entry in running:
            entry.abort.set()
        tasks = [a.task for a in running if a.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=_STOP_GRACE)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def notification(entry: BackgroundAgent, result: str, usage: dict[str, int]) -> str:
    """What the model reads when a background agent ended (Claude Code's `<task-notification>`)."""
    summary = {"completed": "finished", "failed": "failed", "stopped": "was stopped"}.get(entry.status, entry.status)
    return (
        "<task-notification>\n"
        f"<task-id>{entry.task_id}</task-id>\n"
        f"<status>{entry.status}</status>\n"
        f"<summary>Agent \"{escape(entry.description)}\" {summary}</summary>\n"
        f"<result>{escape(result)}</result>\n"
        f"<output-file>{entry.output_path}</output-file>\n"
        f"<usage><total_tokens>{usage.get('total_tokens', 0)}</total_tokens>"
        f"<tool_uses>{usage.get('tool_uses', 0)}</tool_uses><duration_ms>{usage.get('duration_ms', 0)}</duration_ms>"
        "</usage>\n"
        "</task-notification>"
    )


def _usage(data: dict[str, Any], seconds: float) -> dict[str, int]:
    tokens = data.get("usage") or {}
    total = sum(v for k, v in tokens.items() if k.endswith("tokens") and isinstance(v, int))
    return {"total_tokens": total, "tool_uses": int(data.get("tool_uses", 0)), "duration_ms": int(seconds * 1000)}


class _ProgressLog:
    """A bus listener writing one background agent's text and tool calls to its output file."""

    def __init__(self, path: Path, task_id: str) -> None:
        self._path = path
        self._task_id = task_id

    def __call__(self, event: ev.Event) -> None:
        if event.parent_tool_use_id != self._task_id:
            return
        kind = type(event)
        if kind is ev.BlockCompleted and event.block.get("type") == "text":  # type: ignore[attr-defined]
            self._write(event.block.get("text", "") + "\n\n")  # type: ignore[attr-defined]
        elif kind is ev.ToolQueued:
            self._write(f"- {event.name}: {one_line(event.summary, 160)}\n")  # type: ignore[attr-defined]

    def finish(self, status: str, result: str) -> None:
        self._write(f"\n## Result ({status})\n\n{result}\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError), self._path.open("a", encoding="utf-8") as out:
            out.write(text)
