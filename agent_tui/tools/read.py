"""Read: a text file as `cat -n` numbered lines, a window of it at a time; an image as an
`image` block and a PDF as a `document` block (tools/media.py); a notebook as its cells and
outputs (tools/notebook.py)."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui.tools._fileio import number_lines, open_regular
from agent_tui.tools.base import (
    Progress,
    ReadOnlyTool,
    ToolContext,
    ToolResult,
    resolve_path,
)
from agent_tui.tools.file_state import record_read
from agent_tui.tools.media import (
    MAX_PDF_PAGES,
    ImageError,
    PdfError,
    image_file_block,
    is_image_path,
    is_pdf_path,
    parse_pages,
    pdf_document_block,
    unsendable_note,
)
from agent_tui.tools.notebook import NotebookError, is_notebook_path, notebook_blocks, parse_notebook

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# What one Read returns at most (Claude Code's 256 KB): longer windows stop at a line boundary.
MAX_WINDOW_CHARS = 256_000
# A UTF-8 character is at most 4 bytes: this much of a line holds all that can be shown of it.
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4 + 2
_CHUNK_BYTES = 1 << 20
EXCERPT_LINES = 20
# A NUL byte in the first block is the usual sign of a binary file (what git and grep check).
_SNIFF_BYTES = 8192

DESCRIPTION = f"""\
Reads a file from the local filesystem.

Usage:
- The file_path parameter must be an absolute path, not a relative path.
- By default, it reads up to {DEFAULT_LIMIT} lines starting from the beginning of the file.
- You can optionally specify a line offset and limit (especially handy for long files), but it's \
recommended to read the whole file by not providing these parameters.
- Any lines longer than {MAX_LINE_CHARS} characters will be truncated.
- Results are returned using cat -n format, with line numbers starting at 1.
- This tool reads files, not directories. To list a directory, use the Bash tool with `ls` or the Glob tool.
- This tool allows you to read images (PNG, JPEG, GIF, WebP). When reading an image file the contents are \
presented visually.
- This tool can read Jupyter notebooks (.ipynb files) and returns all cells with their outputs, \
combining code, text, and visualizations.
- This tool can read PDF files (.pdf). For large PDFs (more than 10 pages), you MUST provide the pages \
parameter to read specific page ranges (e.g., pages: "1-5"). Maximum 20 pages per request.
- Other binary files cannot be read.
- You can call multiple tools in a single response. It is always better to speculatively read \
multiple potentially useful files in parallel.
- If you read a file that exists but has empty contents you will receive a system reminder \
warning in place of file contents."""


@dataclass(slots=True)
class _Window:
    lines: list[str]
    total_lines: int
    truncated_lines: int
    # The first line left out because the window reached MAX_WINDOW_CHARS, if one was.
    cut_at: int | None = None


class ReadTool(ReadOnlyTool):
    name = "Read"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path to the file to read"},
            "offset": {
                "type": "integer",
                "description": "The line number to start reading from. "
                "Only provide if the file is too large to read at once",
            },
            "limit": {
                "type": "integer",
                "description": "The number of lines to read. Only provide if the file is too large to read at once.",
            },
            "pages": {
                "type": "string",
                "description": 'Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF '
                f"files. Maximum {MAX_PDF_PAGES} pages per request.",
            },
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if input.get("offset", 1) < 0:
            return "offset must be a line number of 1 or more."
        if input.get("limit", DEFAULT_LIMIT) < 1:
            return "limit must be at least 1."
        path = resolve_path(input["file_path"], ctx.cwd)
        if not path.exists():
            return f"File does not exist. Current working directory: {ctx.cwd}"
        if path.is_dir():
            return f"{path} is a directory, not a file. Use Bash `ls` or the Glob tool to list its contents."
        if not path.is_file():
            return f"{path} is not a regular file."
        if not os.access(path, os.R_OK):
            return f"Permission denied: {path}"
        if "pages" in input:
            if not is_pdf_path(path):
                return "The pages parameter only applies to PDF files."
            try:
                start, end = parse_pages(input["pages"])
            except ValueError:
                return f'Invalid pages parameter {input["pages"]!r}: use a page number or a range such as "1-5".'
            if end - start + 1 > MAX_PDF_PAGES:
                return f"At most {MAX_PDF_PAGES} pages are read per call; asked for {end - start + 1}."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        # normalised but not symlink-resolved: the key the read-state cache uses
        path = Path(os.path.abspath(resolve_path(input["file_path"], ctx.cwd)))
        if is_image_path(path) or is_pdf_path(path):
            yield await asyncio.to_thread(_read_media, path, input.get("pages"))
            return
        if is_notebook_path(path):
            notebook = await asyncio.to_thread(_read_notebook, path, ctx)
            if notebook is not None:
                yield notebook
                return
        start = max(input.get("offset") or 1, 1)
        limit = input.get("limit") or DEFAULT_LIMIT
        try:
            mtime = path.stat().st_mtime
            if await asyncio.to_thread(_looks_binary, path):
                yield ToolResult(
                    f"This tool cannot read binary files. {path} appears to be a binary file "
                    f"({path.stat().st_size} bytes).",
                    is_error=True,
                )
                return
            content: str | None = None
            if ctx.files is not None and ctx.files.reads:
                # The editor's buffer, unsaved changes included (docs/architecture.md §8).
                content = await ctx.files.read_text(path)
                window = _window(io.BytesIO(content.encode("utf-8", "surrogateescape")), start, limit)
            else:
                window = await asyncio.to_thread(_read_window, path, start, limit)
        except OSError as exc:
            yield ToolResult(f"Could not read {path}: {exc.strerror or exc}", is_error=True)
            return
        except Exception as exc:  # the editor's error, whatever it is, is the tool's result
            yield ToolResult(f"Could not read {path} from the editor: {exc}", is_error=True)
            return

        partial = start > 1 or start - 1 + len(window.lines) < window.total_lines
        record_read(ctx.state, path, content, partial, mtime=mtime)
        data = {
            "path": str(path),
            "lines_read": len(window.lines),
            "total_lines": window.total_lines,
            "excerpt": "\n".join(window.lines[:EXCERPT_LINES]),
        }
        yield ToolResult(_render(window, start), data=data)


def _read_media(path: Path, pages: str | None) -> ToolResult:
    """An image or a PDF as the block the API takes.  An image that cannot be sent leaves a
    note in its place, which ends the query with `image_error` before the next request."""
    try:
        if is_pdf_path(path):
            pdf = pdf_document_block(path, pages)
            return ToolResult([pdf.block], data={"path": str(path), "media": pdf.describe()})
        image = image_file_block(path)
    except ImageError as exc:
        note = f"Image {path} could not be sent to the model: {exc}."
        return ToolResult([unsendable_note(note)], is_error=True, data={"path": str(path), "image_error": str(exc)})
    except PdfError as exc:
        return ToolResult(str(exc), is_error=True, data={"path": str(path)})
    except OSError as exc:
        return ToolResult(f"Could not read {path}: {exc.strerror or exc}", is_error=True)
    return ToolResult([image.block], data={"path": str(path), "media": image.describe()})


def _read_notebook(path: Path, ctx: ToolContext) -> ToolResult | None:
    """A notebook as its cells with their outputs (tools/notebook.py); None when the file is not
    one after all (it is then read as text)."""
    try:
        mtime = path.stat().st_mtime
        with open_regular(path) as f:
            raw = f.read()
        notebook = parse_notebook(raw.decode("utf-8", errors="replace"))
    except (OSError, NotebookError):
        return None
    record_read(ctx.state, path, raw, False, mtime=mtime)
    blocks = notebook_blocks(notebook, path)
    images = sum(1 for b in blocks if b.get("type") == "image")
    data = {"path": str(path), "cells": len(notebook["cells"]), "images": images,
            "excerpt": "\n".join(b["text"] for b in blocks if b.get("type") == "text")[:2000]}
    return ToolResult(blocks, data=data)


def _looks_binary(path: Path) -> bool:
    with open_regular(path) as f:
        return b"\0" in f.read(_SNIFF_BYTES)


def _read_window(path: Path, start: int, limit: int) -> _Window:
    with open_regular(path) as f:
        return _window(f, start, limit)


def _window(f: Any, start: int, limit: int) -> _Window:
    """Lines start..start+limit-1 (1-based) of the binary file `f`, counting the whole file without holding it.

    Memory stays bounded whatever the file: a line is read only as far as can be shown of it
    (`MAX_LINE_CHARS`) and the rest of it skipped in chunks, the window stops at
    `MAX_WINDOW_CHARS`, and the lines outside it are only counted.
    """
    lines: list[str] = []
    truncated = 0
    size = 0
    cut_at: int | None = None
    total = _skip_lines(f, start - 1)
    while total == start - 1 + len(lines) and len(lines) < limit:
        head = f.readline(_MAX_LINE_BYTES)
        if not head:
            break
        cut = len(head) == _MAX_LINE_BYTES and not head.endswith(b"\n")
        if cut:
            _skip_rest_of_line(f)
        total += 1
        line = head.decode("utf-8", "replace").rstrip("\r\n")
        if cut or len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS]
            truncated += 1
        if lines and size + len(line) > MAX_WINDOW_CHARS:
            cut_at = total
            break
        size += len(line) + 1
        lines.append(line)
    total += _count_rest(f)
    return _Window(lines, total, truncated, cut_at)


def _skip_rest_of_line(f: Any) -> None:
    """Read past the end of the current line (or to the end of the file) in bounded chunks."""
    while chunk := f.read(_CHUNK_BYTES):
        newline = chunk.find(b"\n")
        if newline >= 0:
            f.seek(newline + 1 - len(chunk), os.SEEK_CUR)
            return


def _skip_lines(f: Any, count: int) -> int:
    """Skip up to `count` lines; how many there were."""
    skipped = 0
    while skipped < count and (chunk := f.readline(_CHUNK_BYTES)):
        if not chunk.endswith(b"\n"):
            _skip_rest_of_line(f)
        skipped += 1
    return skipped


def _count_rest(f: Any) -> int:
    """The lines from here to the end of the file (a last one without a newline counts)."""
    count = 0
    last = b""
    while chunk := f.read(_CHUNK_BYTES):
        count += chunk.count(b"\n")
        last = chunk
    return count + (1 if last and not last.endswith(b"\n") else 0)


def _render(window: _Window, start: int) -> str:
    if window.total_lines == 0:
        return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    if not window.lines:
        return (
            f"<system-reminder>Warning: the file exists but is shorter than the provided offset ({start}). "
            f"The file has {window.total_lines} lines.</system-reminder>"
        )
    text = number_lines("\n".join(window.lines), start)
    last = start + len(window.lines) - 1
    notes = []
    if window.truncated_lines:
        notes.append(f"{window.truncated_lines} line(s) longer than {MAX_LINE_CHARS} characters were truncated.")
    if window.cut_at is not None:
        notes.append(
            f"Output stopped at {MAX_WINDOW_CHARS} characters, before line {window.cut_at}: "
            "the file was truncated here."
        )
    if start > 1 or last < window.total_lines:
        notes.append(
            f"Showing lines {start}-{last} of {window.total_lines}. "
            "Use offset and limit to read other parts of the file."
        )
    if notes:
        text += "\n\n(" + " ".join(notes) + ")"
    return text
