"""Calling one tool directly, the way the executor does: its input is checked first."""

from __future__ import annotations

from agent_tui.tools.base import Progress, Tool, ToolContext, ToolResult, validate_input


async def call_tool(tool: Tool, input: dict, ctx: ToolContext) -> list[Progress | ToolResult]:
    """What `call` yields, or the one error result the executor gives an invalid input."""
    problem = await validate_input(tool, input, ctx)
    if problem is not None:
        return [ToolResult(problem, is_error=True)]
    return [item async for item in tool.call(input, ctx)]
