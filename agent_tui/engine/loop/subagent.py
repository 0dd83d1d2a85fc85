"""Running the Agent tool's subagent: a `query()` of its own (tools/agent.py is the tool).

The subagent gets a fresh history holding only the prompt, its own tool state
(the plan, what it has read), the parent's tools minus Agent (no nesting) and ExitPlanMode, the
parent's permission policy and hooks.  Its events go out on the parent's bus
tagged with `parent_tool_use_id` = the Agent tool_use's id, so front ends can
nest them under the call.  Only its final text comes back as the tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import platform
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from ...tools.agent import GENERAL_PURPOSE, AgentDefinition, AgentTool
from ...tools.base import ToolContext, ToolResult
from ..hooks import context_text, hook_label
from ..messages import Message, text_block, user_message
from ..models.base import DEFAULT_MODEL, ModelClient
from .executor import ExecutorOptions
from .query import QueryParams, Terminal, TerminalReason, query

# An agent file's `model: sonnet` means the current model of that family, as in Claude Code.
MODEL_ALIASES = {"sonnet": DEFAULT_MODEL, "opus": "claude-opus-4-6", "haiku": "claude-haiku-4-5"}
# Tool state a subagent starts without: its own plan, its own record of what it read.
_PRIVATE_STATE = ("todos", "read_files")

SYSTEM_PROMPT = """\
You are a subagent of agent-tui, a coding agent running in the user's terminal. The main agent \
delegated one task to you. Use the tools available to complete it: do what has been asked, nothing \
more, nothing less. Search broadly when you do not know where something lives, and read before you \
conclude. Nobody sees your messages while you work and nobody can answer questions: only your final \
message goes back to the main agent. When you are done, reply with a concise, complete report of what \
you found or did, including the absolute paths of relevant files and any code snippets that matter.

Available tools:
{tools}

<env>
Working directory: {cwd}
Platform: {platform}
Today's date: {today}
Model: {model}
</env>"""


async def run_subagent(
    parent: QueryParams,
    agent: AgentDefinition,
    input: dict[str, Any],
    ctx: ToolContext,
    *,
    cwd: Path,
    on_usage: Callable[[dict[str, int], dict[str, dict[str, int]]], None],
) -> ToolResult:
    """The Agent tool's result: the subagent's final text, or why it stopped before finishing.

    `parent`: the session's query settings (model, tools, policy, bus, hooks, limits), which
    the subagent inherits; `on_usage` counts what it spent as the session's too."""
    terminal = await _run_query(parent, agent, input, ctx, cwd, on_usage)
    data = {
        "description": input["description"],
        "subagent_type": input.get("subagent_type") or GENERAL_PURPOSE,
        "terminal_reason": terminal.reason.value,
        "turns": terminal.turns,
        "tool_uses": _count_tool_uses(terminal),
        "usage": dict(terminal.usage),
    }
    if terminal.reason is TerminalReason.COMPLETED and not terminal.error:
        return ToolResult(terminal.result, data=data)
    problem = terminal.error or terminal.reason.value
    text = f"The agent stopped before finishing ({terminal.reason.value}): {problem}"
    if terminal.result:
        text += f"\n\nIts last message:\n{terminal.result}"
    # Stopped in its tools with no abort from above: the person said no to one of them.
    refused = terminal.reason is TerminalReason.ABORTED_TOOLS and not ctx.abort.is_set()
    return ToolResult(text, is_error=True, data=data, ends_turn=refused)


async def _subagent_start(parent: QueryParams, agent_type: str, agent_id: str, prompt: str) -> Message:
    """The subagent's first message: its prompt, with what SubagentStart hooks add to its context."""
    fields = {"agent_id": agent_id, "agent_type": agent_type}
    if parent.hooks is None or not parent.hooks.has("SubagentStart", fields):
        return user_message(prompt)
    outcome = await parent.hooks.run("SubagentStart", fields, parent_tool_use_id=agent_id)
    label = hook_label("SubagentStart", fields)
    return user_message([text_block(prompt), *(text_block(context_text(label, c)) for c in outcome.additional_context)])


async def _run_query(
    parent: QueryParams,
    agent: AgentDefinition,
    input: dict[str, Any],
    ctx: ToolContext,
    cwd: Path,
    on_usage: Callable[[dict[str, int], dict[str, dict[str, int]]], None],
) -> Terminal:
    """Run the subagent's query; an abort of the parent, or this call being cancelled, stops it cleanly."""
    tool_use_id = ctx.tool_use_id
    # no nesting, and only the person's own conversation leaves plan mode
    tools = [t for t in parent.tools if t.name not in (AgentTool.name, "ExitPlanMode")]
    if agent.tools is not None:
        tools = [t for t in tools if t.name in agent.tools]
    abort = asyncio.Event()
    state = {k: v for k, v in ctx.state.items() if k not in _PRIVATE_STATE}
    # It starts knowing what the parent read, so it can edit those files; what it reads stays its own.
    state["read_files"] = {path: dict(entry) for path, entry in ctx.state.get("read_files", {}).items()}

    def make_context(child_id: str) -> ToolContext:
        return dataclasses.replace(parent.make_context(child_id), abort=abort, state=state)

    model = parent.model
    # The model in use: after a fallback, the subagent stays off the overloaded primary.
    model_name = _model_name(model, agent, ctx.model or model.name)
    label = model.label if model_name == model.name else model_name
    # The permission denials it adds to and the clock its tool durations are measured with.
    inherited = parent.executor_options or ExecutorOptions()
    # Derived from the parent's, so every setting it does not change is inherited (limits, budget, hooks, ...).
    prompt = await _subagent_start(parent, agent.name, tool_use_id, input["prompt"])
    params = dataclasses.replace(
        parent,
        messages=[prompt],
        agent_type=agent.name,
        tools=tools,
        abort=abort,
        make_context=make_context,
        system=_system_prompt(cwd, tools, label, agent),
        model_name=model_name,
        parent_tool_use_id=tool_use_id,
        executor_options=dataclasses.replace(inherited, parent_tool_use_id=tool_use_id),
        # Its own history and totals: nothing of it is persisted or counted as the parent's query.
        usage_totals={},
        usage_by_model={},
        on_message=None,
        reload_system=None,
        tracking=None,
        take_notifications=None,
        memo=None,
    )
    run = asyncio.ensure_future(query(params))
    relay = asyncio.ensure_future(_relay(ctx.abort, abort))
    try:
        return await asyncio.shield(run)
    except asyncio.CancelledError:
        # Let the subagent stop its own tools and close its history before this call ends.
        abort.set()
        with contextlib.suppress(Exception):
            await run
        raise
    finally:
        relay.cancel()
        # What the subagent spent is the session's too (/cost, total_cost_usd).
        on_usage(params.usage_totals, params.usage_by_model)


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


def _system_prompt(cwd: Path, tools: list[Any], model: str, agent: AgentDefinition | None = None) -> str:
    prompt = SYSTEM_PROMPT.format(
        tools="\n".join(f"- {t.name}" for t in tools),
        cwd=cwd,
        platform=platform.system().lower(),
        today=date.today().isoformat(),
        model=model,
    )
    if agent is None or not agent.system_prompt:
        return prompt
    # A project agent's own prompt replaces the generic role; the environment still follows it.
    env = prompt[prompt.index("Available tools:"):]
    return f"{agent.system_prompt}\n\n{env}"


def _model_name(model: ModelClient, agent: AgentDefinition, current: str) -> str:
    """The agent file's model (an alias or an id); the model in use (`current`) when it names
    none, or when the session runs offline (the demo model answers for every name)."""
    if not agent.model or model.offline:
        return current
    return MODEL_ALIASES.get(agent.model, agent.model)


def _count_tool_uses(terminal: Terminal) -> int:
    return sum(
        1
        for m in terminal.messages
        if m["role"] == "assistant"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )
