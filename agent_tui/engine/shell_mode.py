"""`!command` typed in the input: the person's own shell command (Claude Code's bash mode).

It runs as a Bash call the person made, through the same executor as the model's calls: the
permission policy decides (deny rules refuse it, an undecided call asks), hooks run, and the
sandbox applies as for Bash.  Its row and output show like any tool call's.  The command and its
output then wait for the model, in Claude Code's `<bash-input>` / `<bash-stdout>` form, and go
with the next prompt; the history gains no tool_use of it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..tools.base import Tool, ToolContext
from . import events as ev
from .hooks import HookRunner
from .loop.attempts import Aborted, until_aborted
from .loop.executor import ExecutorOptions, StreamingToolExecutor
from .permissions.policy import PermissionPolicy

BASH = "Bash"


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    """What a `!command` did: whether it ran, and its output as the model will read it."""

    ran: bool
    output: str
    is_error: bool

    def context(self, command: str) -> str:
        """The text the next prompt carries (Claude Code's bash-mode tags)."""
        tag = "bash-stderr" if self.is_error else "bash-stdout"
        return f"<bash-input>{command}</bash-input>\n<{tag}>{self.output}</{tag}>"


async def run_shell_command(command: str, *, tools: list[Tool], policy: PermissionPolicy,
                            emit: Callable[[ev.Event], None], make_context: Callable[[str], ToolContext],
                            options: ExecutorOptions, hooks: HookRunner | None, abort: asyncio.Event) -> ShellOutcome:
    """Run `command` as the person's Bash call; refused (ran=False) without a Bash tool."""
    bash = next((tool for tool in tools if tool.name == BASH), None)
    if bash is None:
        return ShellOutcome(False, "There is no Bash tool in this session.", True)
    executor = StreamingToolExecutor({BASH: bash}, policy=policy, emit=emit, make_context=make_context,
                                     options=options, hooks=hooks)
    executor.add_tool({"type": "tool_use", "id": f"toolu_shell_{uuid.uuid4().hex[:20]}", "name": BASH,
                       "input": {"command": command}})
    try:
        [result] = await until_aborted(executor.results(), abort)
    except Aborted:
        [result] = await executor.abort()
    [tracked] = executor.tracked
    content = result.get("content")
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])
    return ShellOutcome(tracked.outcome in ("done", "error"), text, bool(result.get("is_error")))
