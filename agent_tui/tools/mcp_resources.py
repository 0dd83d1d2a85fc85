"""ListMcpResourcesTool and ReadMcpResourceTool: MCP servers' resources for the model.

Claude Code's names, schemas and wording.  Both only read, so they run without asking (a deny
rule still stops them), beside other reads.  The servers are reached through an
`McpResourceHost` (the MCP manager in `engine/mcp.py`); a server that fails answers with an
`McpCallError`, which becomes an `is_error` result.  A resource's text goes back as Claude
Code's JSON; an image as an `image` block, other binary content saved to a file whose path the
model reads (as for MCP tool results, tools/mcp.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from agent_tui.tools.base import ReadOnlyTool, ToolContext, ToolResult, one_line
from agent_tui.tools.mcp import McpCallError, render_result

LIST_RESOURCES_TOOL = "ListMcpResourcesTool"
READ_RESOURCE_TOOL = "ReadMcpResourceTool"


@dataclass(frozen=True, slots=True)
class McpResource:
    """One entry of a server's resources/list."""

    server: str
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"uri": self.uri, "name": self.name}
        if self.mime_type:
            entry["mimeType"] = self.mime_type
        if self.description:
            entry["description"] = self.description
        return {**entry, "server": self.server}


class McpResourceHost(Protocol):
    def resource_servers(self) -> list[str]:
        """The connected servers that offer resources."""
        ...

    async def list_resources(self, server: str | None = None) -> list[McpResource]:
        """Every resource (of `server` only, if given); McpCallError for a server not there."""
        ...

    async def read_resource(self, server: str, uri: str) -> Any:
        """The server's ReadResourceResult; McpCallError when it cannot be read."""
        ...


LIST_DESCRIPTION = """\
Lists available resources from configured MCP servers.
Each resource object includes a 'server' field indicating which server it's from.

Usage examples:
- List all resources from all servers: `listMcpResources`
- List resources from a specific server: `listMcpResources({ server: "myserver" })`"""

READ_DESCRIPTION = """\
Reads a specific resource from an MCP server, identified by server name and resource URI.

Parameters:
- server (required): The name of the MCP server from which to read the resource
- uri (required): The URI of the resource to read"""


class ListMcpResourcesTool(ReadOnlyTool):
    name = LIST_RESOURCES_TOOL
    description = LIST_DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {"server": {"type": "string", "description": "Optional server name to filter resources by"}},
        "additionalProperties": False,
    }

    def __init__(self, host: McpResourceHost) -> None:
        self._host = host

    def summarize(self, input: dict[str, Any]) -> str:
        return str(input.get("server") or "all servers")

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolResult]:
        server = input.get("server") or None
        try:
            resources = await self._host.list_resources(server)
        except McpCallError as exc:
            yield ToolResult(str(exc), is_error=True)
            return
        if not resources:
            yield ToolResult("No resources found. MCP servers may still provide tools even if they have no resources.")
            return
        yield ToolResult(json.dumps([r.to_json() for r in resources], ensure_ascii=False),
                         data={"count": len(resources)})


class ReadMcpResourceTool(ReadOnlyTool):
    name = READ_RESOURCE_TOOL
    description = READ_DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "The MCP server name"},
            "uri": {"type": "string", "description": "The resource URI to read"},
        },
        "required": ["server", "uri"],
        "additionalProperties": False,
    }

    def __init__(self, host: McpResourceHost) -> None:
        self._host = host

    def summarize(self, input: dict[str, Any]) -> str:
        return one_line(f"{input.get('server', '')}:{input.get('uri', '')}", 80)

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolResult]:
        content, is_error = await read_resource_content(self._host, input["server"], input["uri"], ctx)
        yield ToolResult(content, is_error=is_error, data={"server": input["server"]})


async def read_resource_content(
    host: McpResourceHost, server: str, uri: str, ctx: ToolContext | None
) -> tuple[str | list[dict[str, Any]], bool]:
    """A resource as the model reads it, and whether that is an error: Claude Code's
    `{"contents": [...]}` JSON for text, then image/document blocks for images and PDFs."""
    try:
        result = await host.read_resource(server, uri)
    except McpCallError as exc:
        return str(exc), True
    contents: list[dict[str, Any]] = []
    binary = []
    for item in getattr(result, "contents", None) or []:
        entry = {"uri": str(item.uri), **({"mimeType": item.mime_type} if item.mime_type else {})}
        if getattr(item, "text", None) is not None:
            contents.append({**entry, "text": item.text})
        else:
            binary.append(_Embedded(item))
            contents.append(entry)
    text = json.dumps({"contents": contents}, ensure_ascii=False)
    if not binary:
        return text, False
    rendered = await asyncio.to_thread(render_result, _Blocks(binary), f"{server}:{uri}", ctx)
    parts = [{"type": "text", "text": "\n".join(p for p in (text, rendered.text) if p)}]
    return parts + rendered.media, False


@dataclass
class _Embedded:
    """A resource's binary content as render_result reads an embedded resource."""

    resource: Any
    type: str = "resource"


@dataclass
class _Blocks:
    content: list[Any]
    structured_content: Any = None
