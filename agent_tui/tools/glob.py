"""Glob: file paths matching a pattern, newest first (ripgrep's file walker, .gitignore aware)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_tui.tools.base import (
    Progress,
    ReadOnlyTool,
    ToolContext,
    ToolResult,
    resolve_path,
)
from agent_tui.tools.globs import glob_to_regex
from agent_tui.tools.grep import find_rg, run_rg, sort_by_mtime

MAX_RESULTS = 100
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
_GLOB_CHARS = set("*?[{")

DESCRIPTION = f"""\
- Fast file pattern matching tool that works with any codebase size.
- Supports glob patterns like "**/*.js" or "src/**/*.ts".
- Returns absolute file paths sorted by modification time, newest first (at most {MAX_RESULTS}).
- Files ignored by .gitignore and the .git folder are skipped.
- Use this tool when you need to find files by name patterns.
- When you are doing an open ended search that may require multiple rounds of globbing and \
grepping, use the Agent tool instead.
- You can call multiple tools in a single response. It is always better to speculatively perform \
multiple searches in parallel if they are potentially useful."""


class GlobTool(ReadOnlyTool):
    name = "Glob"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The glob pattern to match files against"},
            "path": {
                "type": "string",
                "description": "The directory to search in. If not specified, the current working directory "
                "will be used. Omit this field to use the default; do not pass null or \"undefined\".",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if not input["pattern"].strip():
            return "pattern must not be empty."
        if "path" in input:
            path = resolve_path(input["path"], ctx.cwd)
            if not path.exists():
                return f"Directory does not exist: {input['path']}"
            if not path.is_dir():
                return f"Path is not a directory: {input['path']}"
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        base, pattern = _split_pattern(input["pattern"], resolve_path(input.get("path", "."), ctx.cwd).resolve())
        if not base.is_dir():
            yield ToolResult("No files found", data={"files": [], "count": 0, "truncated": False})
            return
        if find_rg() is None:
            files = await asyncio.to_thread(_python_glob, base, pattern)
        else:
            # The pattern is matched here, not passed to ripgrep: its --glob whitelists
            # override .gitignore, which would list ignored files.
            run = await run_rg(["--files", "--hidden", "--glob", "!.git", "."], base, ctx.abort)
            if run.aborted:
                yield ToolResult("Interrupted by user", is_error=True)
                return
            if run.returncode not in (0, 1) and not run.stdout:
                yield ToolResult(f"Glob failed: {run.stderr.strip()}", is_error=True)
                return
            lines = run.stdout.decode("utf-8", "replace").splitlines()
            match = glob_regex(pattern).fullmatch
            files = [str(base / rel) for line in lines if line and match(rel := line.removeprefix("./"))]
        if ctx.read_denied is not None:
            files = [f for f in files if not ctx.read_denied(f)]
        files = await asyncio.to_thread(sort_by_mtime, files)
        truncated = len(files) > MAX_RESULTS
        shown = files[:MAX_RESULTS]
        data = {"files": shown, "count": len(files), "truncated": truncated}
        if not shown:
            yield ToolResult("No files found", data=data)
            return
        yield ToolResult("\n".join(shown + ([TRUNCATED_NOTE] if truncated else [])), data=data)


def _split_pattern(pattern: str, base: Path) -> tuple[Path, str]:
    """The search root and a glob anchored at it.

    ripgrep globs follow .gitignore rules, where "*.py" matches at any depth;
    the leading "/" gives shell semantics instead ("*.py" at the top only,
    "**/*.py" everywhere).  An absolute pattern's literal leading folders
    become the root.
    """
    if not Path(pattern).is_absolute():
        return base, "/" + pattern.removeprefix("./")
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if _GLOB_CHARS & set(part):
            return Path(*parts[:i]), "/" + "/".join(parts[i:])
    return Path(*parts[:-1]), "/" + parts[-1]


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a shell glob relative to the search root (`{a,b}` as in bash)."""
    return re.compile(glob_to_regex(pattern.lstrip("/"), braces=True))


def _python_glob(base: Path, pattern: str) -> list[str]:
    return [
        str(p)
        for p in base.glob(pattern.lstrip("/"))
        if p.is_file() and ".git" not in p.relative_to(base).parts
    ]
