"""Agent: a subagent for a self-contained task (Claude Code's Task tool, named `Agent`).

The subagent is a `query()` of its own: a fresh history holding only the
prompt, its own tool state (the plan, what it has read), the parent's tools
minus Agent (no nesting), the parent's permission policy and hooks.  Its events
go out on the parent's bus tagged with `parent_tool_use_id` = this Agent
tool_use's id, so front ends can nest them under the call.  Only its final text
comes back as the tool result.

The tool needs the session (model, tools, policy, bus, hooks), which it gets
through `attach_session` when the Session is built.  Besides the built-in
general-purpose agent, the session's `agent_types` (`.claude/agents/*.md`)
are offered: each with its own system prompt, tool list and model.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import platform
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_tui.engine.claude_files import AgentDefinition
from agent_tui.engine.executor import ExecutorOptions
from agent_tui.engine.messages import user_message
from agent_tui.engine.model import DEFAULT_MODEL
from agent_tui.engine.query import QueryParams, Terminal, TerminalReason, query
from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line

if TYPE_CHECKING:
    from agent_tui.engine.session import Session

GENERAL_PURPOSE = "general-purpose"
SUBAGENT_TYPES = {
    GENERAL_PURPOSE: (
        "General-purpose agent for researching complex questions, searching for code, and executing "
        "multi-step tasks. When you are searching for a keyword or file and are not confident that you "
        "will find the right match in the first few tries use this agent to perform the search for you."
    ),
}
BUILT_IN_AGENTS = {GENERAL_PURPOSE: AgentDefinition(GENERAL_PURPOSE, SUBAGENT_TYPES[GENERAL_PURPOSE])}
# An agent file's `model: sonnet` means the current model of that family, as in Claude Code.
MODEL_ALIASES = {"sonnet": DEFAULT_MODEL, "opus": "claude-opus-4-6", "haiku": "claude-haiku-4-5"}
# Tool state a subagent starts without: its own plan, its own record of what it read.
_PRIVATE_STATE = ("todos", "read_files")

DESCRIPTION_TEMPLATE = """\
Launch a new agent to handle complex, multi-step tasks autonomously.

Available agent types and the tools they have access to:
{agents}

When using the Agent tool, you may specify a subagent_type parameter to select which agent type to use \
(default: {GENERAL_PURPOSE}).

When NOT to use the Agent tool:
- If you want to read a specific file path, use the Read or Glob tool instead, to find the match more quickly
- If you are searching for a specific class definition like "class Foo", use the Glob tool instead
- If you are searching for code within a specific file or set of 2-3 files, use the Read tool instead

Usage notes:
1. Launch multiple agents concurrently whenever possible, to maximize performance; to do that, use a \
single message with multiple tool uses
2. When the agent is done, it will return a single message back to you. The result returned by the agent \
is not visible to the user. To show the user the result, you should send a text message back to the user \
with a concise summary of the result.
3. Each agent invocation is stateless. You will not be able to send additional messages to the agent, \
nor will the agent be able to communicate with you outside of its final report. Therefore, your prompt \
should contain a highly detailed task description for the agent to perform autonomously and you should \
specify exactly what information the agent should return back to you in its final and only message to you.
4. The agent's outputs should generally be trusted
5. Clearly tell the agent whether you expect it to write code or just to do research (search, file reads, \
web fetches, etc.), since it is not aware of the user's intent"""


def describe_agents(types: Mapping[str, AgentDefinition]) -> str:
    """The tool's description, listing every agent type the model may ask for."""
    lines = []
    for name, agent in types.items():
        tools = ", ".join(agent.tools) if agent.tools is not None else "all tools except Agent"
        lines.append(f"- {name}: {agent.description} (Tools: {tools})")
    return DESCRIPTION_TEMPLATE.replace("{agents}", "\n".join(lines)).replace("{GENERAL_PURPOSE}", GENERAL_PURPOSE)


DESCRIPTION = describe_agents(BUILT_IN_AGENTS)

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


class AgentTool(BaseTool):
    name = "Agent"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
            "prompt": {"type": "string", "description": "The task for the agent to perform"},
            "subagent_type": {
                "type": "string",
                "description": "The type of specialized agent to use for this task",
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self._session: Session | None = None

    def attach_session(self, session: Session) -> None:
        self._session = session
        self.description = describe_agents(self.agent_types())

    def agent_types(self) -> dict[str, AgentDefinition]:
        """The built-in type and the project's (a project file may replace the built-in one)."""
        project = getattr(self._session, "agent_types", None) or {}
        return {**BUILT_IN_AGENTS, **project}

    # Like Claude Code's Task tool: the subagent's own tool calls ask for permission one by one.
    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return True

    def summarize(self, input: dict[str, Any]) -> str:
        return one_line(str(input.get("description", "")), 80)

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        kind = input.get("subagent_type") or GENERAL_PURPOSE
        types = self.agent_types()
        if kind not in types:
            return f"Agent type '{kind}' not found. Available agents: {', '.join(types)}"
        if not input["prompt"].strip():
            return "prompt must not be empty."
        if self._session is None:
            return "The Agent tool is not available here: it runs only inside a session."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        session = self._session
        if session is None:
            yield ToolResult("The Agent tool is not available here: it runs only inside a session.", is_error=True)
            return
        agent = self.agent_types().get(input.get("subagent_type") or GENERAL_PURPOSE, BUILT_IN_AGENTS[GENERAL_PURPOSE])
        terminal = await _run_subagent(session, agent, input, ctx)
        data = {
            "description": input["description"],
            "subagent_type": input.get("subagent_type") or GENERAL_PURPOSE,
            "terminal_reason": terminal.reason.value,
            "turns": terminal.turns,
            "tool_uses": _count_tool_uses(terminal),
            "usage": dict(terminal.usage),
        }
        if terminal.reason is TerminalReason.COMPLETED and not terminal.error:
            yield ToolResult(terminal.result, data=data)
            return
        problem = terminal.error or terminal.reason.value
        text = f"The agent stopped before finishing ({terminal.reason.value}): {problem}"
        if terminal.result:
            text += f"\n\nIts last message:\n{terminal.result}"
        # Stopped in its tools with no abort from above: the person said no to one of them.
        refused = terminal.reason is TerminalReason.ABORTED_TOOLS and not ctx.abort.is_set()
        yield ToolResult(text, is_error=True, data=data, ends_turn=refused)


async def _run_subagent(session: Session, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> Terminal:
    """Run the subagent's query; an abort of the parent, or this call being cancelled, stops it cleanly."""
    tool_use_id = ctx.tool_use_id
    tools = [t for t in session.tools if t.name != AgentTool.name]
    if agent.tools is not None:
        tools = [t for t in tools if t.name in agent.tools]
    abort = asyncio.Event()
    state = {k: v for k, v in ctx.state.items() if k not in _PRIVATE_STATE}
    # It starts knowing what the parent read, so it can edit those files; what it reads stays its own.
    state["read_files"] = {path: dict(entry) for path, entry in ctx.state.get("read_files", {}).items()}

    def make_context(child_id: str) -> ToolContext:
        return dataclasses.replace(session.make_context(child_id), abort=abort, state=state)

    options = session.options
    # The model in use: after a fallback, the subagent stays off the overloaded primary.
    model_name = _model_name(session, agent, ctx.model or session.model.name)
    label = session.model.label if model_name == session.model.name else model_name
    params = QueryParams(
        messages=[user_message(input["prompt"])],
        model=session.model,
        tools=tools,
        policy=session.policy,
        emit=session.bus.publish,
        abort=abort,
        make_context=make_context,
        system=_system_prompt(session.cwd, tools, label, agent),
        model_name=model_name,
        max_tokens=options.max_tokens,
        max_turns=options.max_turns,
        max_concurrency=options.max_concurrency,
        context_window=session.context_window,
        retry=options.retry,
        parent_tool_use_id=tool_use_id,
        executor_options=ExecutorOptions(
            max_concurrency=options.max_concurrency,
            parent_tool_use_id=tool_use_id,
            denials=session.permission_denials,
            clock=options.clock,
        ),
        hooks=session.hooks,
        fallback_model=session.fallback_model,
        compaction=session.compaction_settings,
        results_dir=session.results_dir,
        prompt_caching=session.prompt_caching,
        thinking=session.thinking,
        effort=session.effort,
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
        session.add_usage_totals(params.usage_totals, params.usage_by_model)


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


def _model_name(session: Session, agent: AgentDefinition, current: str) -> str:
    """The agent file's model (an alias or an id); the model in use (`current`) when it names
    none, or when the session runs offline (the demo model answers for every name)."""
    if not agent.model or session.model.offline:
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
