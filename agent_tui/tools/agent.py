"""Agent: a subagent for a self-contained task (Claude Code's Task tool, named `Agent`).

The subagent is a `query()` of its own, which the session runs
(`engine/loop/subagent.py`): a fresh history holding only the prompt, its own tool
state, the parent's tools minus Agent (no nesting), the parent's permission
policy and hooks, its events tagged with this Agent tool_use's id.  Only its
final text comes back as the tool result; with `run_in_background` the call returns at once and
the report comes later as a notification (engine/background_agents.py).

This module is the tool the model sees: its description, schema and checks.
It gets the session through `attach_session`.  Besides the built-in
general-purpose agent, the session's `agent_types` (`.claude/agents/*.md`) are
offered: each with its own system prompt, tool list and model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """A subagent type: built in, or a `.claude/agents/<name>.md` file."""

    name: str
    description: str
    # The subagent's system prompt (the file's body); "" for the built-in one.
    system_prompt: str = ""
    # Tool names it may use; None: every tool but Agent.
    tools: tuple[str, ...] | None = None
    # "sonnet" | "opus" | "haiku" | a model id; None or "inherit": the session's model.
    model: str | None = None
    path: Path | None = None


class SubagentRunner(Protocol):
    """What the Agent tool needs from the session that runs it."""

    agent_types: Mapping[str, AgentDefinition]

    async def run_subagent(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the subagent's query to its end; its final text (or why it stopped) as the result."""
        ...

    def launch_background_agent(self, agent: AgentDefinition, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Start the subagent beside the conversation (`run_in_background`); the call's result at once."""
        ...


GENERAL_PURPOSE = "general-purpose"
SUBAGENT_TYPES = {
    GENERAL_PURPOSE: (
        "General-purpose agent for researching complex questions, searching for code, and executing "
        "multi-step tasks. When you are searching for a keyword or file and are not confident that you "
        "will find the right match in the first few tries use this agent to perform the search for you."
    ),
}
BUILT_IN_AGENTS = {GENERAL_PURPOSE: AgentDefinition(GENERAL_PURPOSE, SUBAGENT_TYPES[GENERAL_PURPOSE])}

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
web fetches, etc.), since it is not aware of the user's intent
6. Set run_in_background to true to run the agent while you go on with other work: the call returns at once, \
and a <task-notification> with the agent's report arrives in a later message when it is done (do not poll \
for it; its output_file shows its progress). Run it in the foreground when your very next step needs its \
result"""


def describe_agents(types: Mapping[str, AgentDefinition]) -> str:
    """The tool's description, listing every agent type the model may ask for."""
    lines = []
    for name, agent in types.items():
        tools = ", ".join(agent.tools) if agent.tools is not None else "all tools except Agent"
        lines.append(f"- {name}: {agent.description} (Tools: {tools})")
    return DESCRIPTION_TEMPLATE.replace("{agents}", "\n".join(lines)).replace("{GENERAL_PURPOSE}", GENERAL_PURPOSE)


DESCRIPTION = describe_agents(BUILT_IN_AGENTS)


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
            "run_in_background": {
                "type": "boolean",
                "description": "Set to true to run this agent in the background. You will be notified when it "
                               "completes.",
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self._session: SubagentRunner | None = None

    def attach_session(self, session: SubagentRunner) -> None:
        self._session = session
        self.description = describe_agents(self.agent_types())

    def agent_types(self) -> dict[str, AgentDefinition]:
        """The built-in type and the project's (a project file may replace the built-in one)."""
        project = self._session.agent_types if self._session is not None else {}
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
        if self._session is None:
            yield ToolResult("The Agent tool is not available here: it runs only inside a session.", is_error=True)
            return
        agent = self.agent_types().get(input.get("subagent_type") or GENERAL_PURPOSE, BUILT_IN_AGENTS[GENERAL_PURPOSE])
        if input.get("run_in_background"):
            yield self._session.launch_background_agent(agent, input, ctx)
            return
        yield await self._session.run_subagent(agent, input, ctx)
