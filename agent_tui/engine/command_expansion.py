"""``!`command` `` in a custom command's body: run before its prompt is sent, each replaced by its output.

Claude Code's custom commands (`.claude/commands/*.md`) carry lines such as
``- Current git status: !`git status` ``.  Expanding the command runs each of them, in order,
as a Bash call would run: through the session's permission policy (with the command's
`allowed-tools` in force), sandboxed as Bash is, with the Bash tool's result text (its
output, and the exit code when it failed) in place of the `!`-span.  A command the policy
allows runs at once; one it would ask about asks the person on the bus (`permission_requested`
with a Future, as a tool call does); one it denies, or asks about where nobody can answer
(print mode), stops the expansion with a `CommandExpansionError` naming the line, and nothing
is sent (docs/architecture.md §6).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..tools.base import Tool, ToolContext, ToolResult, validate_input
from . import events as ev
from .permissions.policy import PermissionAnswer, PermissionPolicy

# Claude Code's form: `!` right before a backticked command, on one line.
SHELL_SPAN = re.compile(r"!`([^`\n]+)`")


class CommandExpansionError(Exception):
    """A `!`-line of a custom command could not run; the prompt is not sent."""


def shell_spans(text: str) -> list[str]:
    """The commands of the `!`-spans in `text`, in order."""
    return [m.group(1).strip() for m in SHELL_SPAN.finditer(text)]


async def expand_shell_spans(
    text: str,
    *,
    command_name: str,
    bash: Tool | None,
    policy: PermissionPolicy,
    cwd: Path,
    make_context: Callable[[str], ToolContext],
    emit: Callable[[ev.Event], None],
) -> str:
    """`text` with every ``!`cmd` `` replaced by what running `cmd` printed."""
    commands = shell_spans(text)
    if not commands:
        return text
    if bash is None:
        raise CommandExpansionError(f"/{command_name} runs shell commands, but the Bash tool is not available")
    outputs: list[str] = []
    for command in commands:
        outputs.append(await _run_one(command, command_name, bash, policy, cwd, make_context, emit))
    replacements = iter(outputs)
    return SHELL_SPAN.sub(lambda _m: next(replacements), text)


async def _run_one(
    command: str,
    command_name: str,
    bash: Tool,
    policy: PermissionPolicy,
    cwd: Path,
    make_context: Callable[[str], ToolContext],
    emit: Callable[[ev.Event], None],
) -> str:
    input: dict[str, Any] = {"command": command, "description": f"/{command_name}: !`{command}`"}
    call_id = f"command_{uuid.uuid4().hex[:12]}"
    ctx = make_context(call_id)
    problem = await validate_input(bash, input, ctx)
    if problem is not None:
        raise CommandExpansionError(f"/{command_name}: !`{command}` cannot run: {problem}")
    decision = policy.decide_call(bash, input, cwd=cwd)
    if decision.behavior == "deny":
        raise CommandExpansionError(
            f"/{command_name}: !`{command}` was not run: {decision.message} "
            "(allow it in the command's allowed-tools, or with --allowedTools)"
        )
    if decision.behavior == "ask":
        answer = await _ask(call_id, input, decision.message, decision.danger, decision.suggested_rule, emit)
        rule = decision.suggested_rule if answer.remember and answer.behavior == "allow" else None
        if rule:
            policy.remember(rule)
        emit(ev.PermissionResolved(tool_use_id=call_id, tool_name=bash.name, behavior=answer.behavior,
                                   remember=answer.remember, rule=rule, feedback=answer.feedback))
        if answer.behavior != "allow":
            raise CommandExpansionError(f"/{command_name}: !`{command}` was not run: permission denied")
    result: ToolResult | None = None
    async for item in bash.call(input, ctx):
        if isinstance(item, ToolResult):
            result = item
    if result is None:
        raise CommandExpansionError(f"/{command_name}: !`{command}` produced no result")
    stdout = result.data.get("stdout")
    if not result.is_error and isinstance(stdout, str):
        return stdout.rstrip("\n")  # what the command printed, "" for nothing (not the "no output" note)
    content = result.content
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def _ask(
    call_id: str, input: dict[str, Any], message: str, danger: str | None, rule: str | None,
    emit: Callable[[ev.Event], None],
) -> PermissionAnswer:
    future: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
    emit(ev.PermissionRequested(tool_use_id=call_id, tool_name="Bash", input=input, message=message,
                                danger=danger, suggested_rule=rule, future=future))
    try:
        return await future
    except asyncio.CancelledError:
        if not future.done():
            future.cancel()
        emit(ev.PermissionResolved(tool_use_id=call_id, tool_name="Bash", behavior="deny", feedback="interrupted"))
        raise
