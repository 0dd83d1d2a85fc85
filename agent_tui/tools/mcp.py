"""A tool served by an MCP server, as the model and the executor see it.

The model calls it `mcp__<server>__<tool>` (Claude Code's naming, which the
permission rules `mcp__server` and `mcp__server__tool` match).  The call goes
to the server through an `McpCaller` (the connection in `engine/mcp.py`);
whatever goes wrong there arrives as an `McpCallError` and becomes an
`is_error` result, so a crashed or hung server never stops the turn.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line

# Same cap as the other tools' generic budget: a longer result is saved to a file, the model
# gets its path and the start of it.
MAX_RESULT_CHARS = 100_000
PREVIEW_CHARS = 2_000
# Claude Code trims MCP tool descriptions; some servers ship pages of text.
MAX_DESCRIPTION_CHARS = 2048

ProgressSink = Callable[[str], None]


class McpCallError(Exception):
    """A call that produced no result from the server; the message is what the model reads."""


class McpCaller(Protocol):
    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, on_progress: ProgressSink | None = None
    ) -> Any:
        """The server's CallToolResult, or raise McpCallError."""
        ...


@dataclass(frozen=True, slots=True)
class McpToolSpec:
    """One entry of a server's tools/list, in our terms."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)


def normalize_name(name: str) -> str:
    """Characters the Messages API accepts in tool names (`[a-zA-Z0-9_-]`); others become `_`."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def mcp_tool_name(server: str, tool: str) -> str:
    return f"mcp__{normalize_name(server)}__{normalize_name(tool)}"


class McpTool(BaseTool):
    def __init__(self, server: str, spec: McpToolSpec, caller: McpCaller) -> None:
        self.server = server
        self.spec = spec
        self._caller = caller
        self.name = mcp_tool_name(server, spec.name)
        description = spec.description or f"{spec.name} (from MCP server {server})"
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        self.description = description
        schema = dict(spec.input_schema or {})
        schema.setdefault("type", "object")
        self.input_schema = schema

    def is_read_only(self, input: dict[str, Any]) -> bool:
        # `readOnlyHint` is the server's own claim, and the server is not the user: it must
        # never let a call skip the permission prompt (as in Claude Code, MCP tools ask unless a
        # rule or the mode allows them).  It only lets an approved call run beside others.
        return False

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return self.spec.read_only

    def summarize(self, input: dict[str, Any]) -> str:
        return one_line(json.dumps(input, ensure_ascii=False), 80) if input else ""

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        progress: asyncio.Queue[str] = asyncio.Queue()
        call = asyncio.ensure_future(self._caller.call_tool(self.spec.name, input, on_progress=progress.put_nowait))
        next_line: asyncio.Future[str] | None = None
        try:
            while not call.done():
                next_line = asyncio.ensure_future(progress.get())
                await asyncio.wait({call, next_line}, return_when=asyncio.FIRST_COMPLETED)
                if next_line.done():
                    yield Progress(next_line.result())
                next_line.cancel()
        finally:
            if next_line is not None:
                next_line.cancel()
            # Cancelling this generator (abort, sibling error) must cancel the request on the server.
            if not call.done():
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        try:
            result = call.result()
        except McpCallError as exc:
            yield ToolResult(str(exc), is_error=True, data={"server": self.server})
            return
        text = render_result(result)
        if len(text) > MAX_RESULT_CHARS:
            text = await asyncio.to_thread(_save_large, text, self.name, ctx)
        yield ToolResult(text, is_error=bool(getattr(result, "is_error", False)), data={"server": self.server})


def render_result(result: Any) -> str:
    """The text the model reads for a CallToolResult: text as is, other content summarised."""
    parts = [_render_block(block) for block in getattr(result, "content", None) or []]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    return "\n".join(p for p in parts if p)


def _save_large(text: str, name: str, ctx: ToolContext) -> str:
    """What the model reads of a result over MAX_RESULT_CHARS: where the whole is saved, and its start.

    Saved before anything formats or shows it, as the context budget saves other tools' large
    results (a file per tool call, under the session's folder)."""
    preview = text[:PREVIEW_CHARS]
    try:
        if ctx.session_dir is not None:
            folder = ctx.session_dir / "tool-results"
            folder.mkdir(parents=True, exist_ok=True)
        else:
            folder = Path(tempfile.mkdtemp(prefix="agent-tui-mcp-"))
        path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', ctx.tool_use_id) or 'result'}.txt"
        path.write_text(text, encoding="utf-8", errors="replace")
    except OSError as exc:
        return (f"{text[:MAX_RESULT_CHARS]}\n\n... [{len(text):,} characters in all; the rest was cut "
                f"and could not be saved: {exc.strerror or exc}]")
    return (
        f"Output too large ({len(text):,} characters, over the {MAX_RESULT_CHARS:,}-character limit for "
        f"{name}). Full output saved to: {path}\n"
        "Read that file (with offset and limit) or search it with Grep for the parts you need.\n\n"
        f"Preview (first {len(preview):,} characters):\n{preview}\n..."
    )


def _render_block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return f"[resource: {res.uri}]\n{res.text}"
        mime = getattr(res, "mime_type", None) or "binary"
        return f"[resource: {res.uri} ({mime}), {_decoded_size(getattr(res, 'blob', ''))} bytes]"
    if kind == "resource_link":
        label = f" {block.name}" if getattr(block, "name", None) else ""
        return f"[resource link: {block.uri}{label}]"
    return f"[{kind or 'unknown'} content]"


def _decoded_size(b64: str) -> int:
    return len(b64) * 3 // 4 - b64[-2:].count("=")
