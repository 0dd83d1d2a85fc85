"""WebSearch: Anthropic's server tool `web_search_20250305`, run by the API, not here.

The request's `tools` carry its definition (engine/server_tools.py decides when:
for Claude models that have it, as the permission rules allow, with their
`WebSearch(domain:…)` rules as `allowed_domains` / `blocked_domains`).  The model
then answers with `server_tool_use` and `web_search_tool_result` blocks inside its
own message; they stay in the history as the API sent them (the text after them
keeps its `citations`), and the transcript shows each as one line
(`describe_server_block`).  No tool_use ever reaches the executor for it: `call`
only answers a model that calls the name as a client tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line

SERVER_TOOL_TYPE = "web_search_20250305"
SERVER_TOOL_NAME = "web_search"
MAX_USES = 8

DESCRIPTION = """\
- Allows Claude to search the web and use the results to inform responses
- Provides up-to-date information for current events and recent data
- Searches are performed by the API within a single response; cite the sources you use."""


class WebSearchTool(BaseTool):
    name = "WebSearch"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 2, "description": "The search query to use"},
            "allowed_domains": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only include search results from these domains",
            },
            "blocked_domains": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Never include search results from these domains",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return True

    def summarize(self, input: dict[str, Any]) -> str:
        return one_line(str(input.get("query", "")), 80)

    def server_definition(
        self, *, allowed_domains: list[str] | None = None, blocked_domains: list[str] | None = None
    ) -> dict[str, Any]:
        """The entry of the request's `tools`; the API takes one of the two domain lists, not both."""
        definition: dict[str, Any] = {"type": SERVER_TOOL_TYPE, "name": SERVER_TOOL_NAME, "max_uses": MAX_USES}
        if allowed_domains:
            definition["allowed_domains"] = list(allowed_domains)
        elif blocked_domains:
            definition["blocked_domains"] = list(blocked_domains)
        return definition

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        yield ToolResult(
            "WebSearch is not available as a client tool here: the API runs web searches itself when the "
            f"request offers its {SERVER_TOOL_NAME} tool, which this model or these permission rules do not.",
            is_error=True,
        )


def describe_server_block(block: dict[str, Any]) -> str | None:
    """One transcript line for a server tool's block (None: not one)."""
    kind = block.get("type")
    if kind == "server_tool_use":
        query = (block.get("input") or {}).get("query")
        name = block.get("name", "server tool")
        label = "Web search" if name == SERVER_TOOL_NAME else name
        return f"{label}: {one_line(str(query), 100)}" if query else label
    if kind == "web_search_tool_result":
        content = block.get("content")
        if isinstance(content, dict):  # web_search_tool_result_error
            return f"Web search failed: {content.get('error_code', 'unknown error')}"
        results = content if isinstance(content, list) else []
        hosts = []
        for result in results:
            url = str(result.get("url", "")) if isinstance(result, dict) else ""
            host = url.split("//", 1)[-1].split("/", 1)[0]
            if host and host not in hosts:
                hosts.append(host)
        shown = ", ".join(hosts[:3]) + (", …" if len(hosts) > 3 else "")
        count = f"{len(results)} result{'s' * (len(results) != 1)}"
        return f"Web search: {count}" + (f" · {shown}" if shown else "")
    return None
