"""A tool served by an MCP server, as the model and the executor see it.

The model calls it `mcp__<server>__<tool>` (Claude Code's naming, which the
permission rules `mcp__server` and `mcp__server__tool` match).  The call goes
to the server through an `McpCaller` (the connection in `engine/mcp.py`);
whatever goes wrong there arrives as an `McpCallError` and becomes an
`is_error` result, so a crashed or hung server never stops the turn.

Images in a result (and image resources) go to the model as `image` blocks,
downscaled to the API's limits (tools/media.py; one that cannot be sent ends the
query with `image_error`), a PDF resource as a `document` block; audio and other
binary content is saved under the session folder and the model reads its path,
as Claude Code does.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import mimetypes
import re
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line
from agent_tui.tools.media import API_IMAGE_MAX_BASE64, ImageError, image_base64_block, unsendable_note

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
        rendered = await asyncio.to_thread(render_result, result, self.name, ctx)
        text = rendered.text
        if len(text) > MAX_RESULT_CHARS:
            text = await asyncio.to_thread(_save_large, text, self.name, ctx)
        data: dict[str, Any] = {"server": self.server}
        if rendered.shown:
            data["media"] = "; ".join(rendered.shown)
        content: str | list[dict[str, Any]] = text
        if rendered.media:
            content = [*([{"type": "text", "text": text}] if text else []), *rendered.media]
        yield ToolResult(content, is_error=bool(getattr(result, "is_error", False)), data=data)


@dataclass
class RenderedResult:
    """A CallToolResult for the model: its text, and the image/document blocks that follow it."""

    text: str
    media: list[dict[str, Any]] = field(default_factory=list)
    # One line per image or document sent, for front ends ("image PNG 800×600 · 41 KB").
    shown: list[str] = field(default_factory=list)


def render_result(result: Any, name: str = "the MCP tool", ctx: ToolContext | None = None) -> RenderedResult:
    """Text as is; images (and image or PDF resources) as blocks; audio and other binary
    content saved to a file whose path the text gives; the rest summarised."""
    out = RenderedResult("")
    parts = []
    for index, block in enumerate(getattr(result, "content", None) or []):
        kind = getattr(block, "type", "")
        resource = getattr(block, "resource", None) if kind == "resource" else None
        blob = getattr(resource, "blob", None) if resource is not None else None
        if kind == "image" or (blob is not None and str(getattr(resource, "mime_type", "")).startswith("image/")):
            _add_image(out, block.data if kind == "image" else blob, name)
        elif blob is not None and getattr(resource, "mime_type", None) == "application/pdf" and _fits(blob):
            out.media.append(_document(blob))
            out.shown.append(f"PDF {resource.uri}")
        elif kind == "audio" or blob is not None:
            mime = getattr(block if kind == "audio" else resource, "mime_type", None) or "application/octet-stream"
            label = kind if kind == "audio" else f"resource: {resource.uri}"
            parts.append(_saved_binary(block.data if kind == "audio" else blob, mime, label, name, index, ctx))
        else:
            parts.append(_render_block(block))
    structured = getattr(result, "structured_content", None)
    if not parts and not out.media and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    out.text = "\n".join(p for p in parts if p)
    return out


def _add_image(out: RenderedResult, data: str, name: str) -> None:
    try:
        image = image_base64_block(data, f"The image from {name}")
    except ImageError as exc:
        out.media.append(unsendable_note(f"{exc}."))
        return
    out.media.append(image.block)
    out.shown.append(image.describe())


def _fits(blob: str) -> bool:
    return len(blob) <= 6 * API_IMAGE_MAX_BASE64  # a PDF rides in the request: keep it well under 32 MB


def _document(blob: str) -> dict[str, Any]:
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": blob}}


def _saved_binary(data: str, mime: str, label: str, name: str, index: int, ctx: ToolContext | None) -> str:
    """Binary content the model cannot take as a block, saved to a file: its description and path."""
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return f"[{label} ({mime}): not valid base64, {len(data):,} characters]"
    ext = mimetypes.guess_extension(mime.split(";", 1)[0].strip()) or ".bin"
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", ctx.tool_use_id if ctx is not None else "") or "result"
    try:
        if ctx is not None and ctx.session_dir is not None:
            folder = ctx.session_dir / "tool-results"
            folder.mkdir(parents=True, exist_ok=True)
        else:
            folder = Path(tempfile.mkdtemp(prefix="agent-tui-mcp-"))
        path = folder / f"{stem}-{index}{ext}"
        path.write_bytes(raw)
    except OSError as exc:
        return f"[{label} ({mime}), {len(raw):,} bytes: could not be saved: {exc.strerror or exc}]"
    return f"[{label} ({mime}), {len(raw):,} bytes from {name}, saved to {path}]"


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
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return f"[resource: {res.uri}]\n{res.text}"
        return f"[resource: {res.uri} ({getattr(res, 'mime_type', None) or 'no content'})]"
    if kind == "resource_link":
        label = f" {block.name}" if getattr(block, "name", None) else ""
        return f"[resource link: {block.uri}{label}]"
    return f"[{kind or 'unknown'} content]"
