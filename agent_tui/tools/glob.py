"""Glob: file paths matching a pattern, newest first (ripgrep's file walker, .gitignore aware)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from agent_tui.tools.base import (
    Progress,
    ReadOnlyTool,
    ToolContext,
    ToolResult,
    model_path,
    resolve_path,
)
from agent_tui.tools.globs import glob_to_regex
from agent_tui.tools.grep import find_rg, run_rg, sort_by_mtime

MAX_RESULTS = 100
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
_GLOB_CHARS = set("*?[{")
# More alternatives than this from `{a,b}` and the pattern is matched without a prefilter.
_MAX_BRACE_EXPANSIONS = 64

DESCRIPTION = f"""\
- Fast file pattern matching tool that works with any codebase size.
- Supports glob patterns like "**/*.js" or "src/**/*.ts".
- Returns file paths sorted by modification time, newest first (at most {MAX_RESULTS}); paths inside \
the working directory are relative to it, others absolute.
- Files ignored by .gitignore and the .git folder are skipped, unless the pattern names an ignored \
folder (e.g. "node_modules/**/*.js").
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
        folder = _literal_folder(pattern)
        if not (base / folder).is_dir():
            yield ToolResult("No files found", data={"files": [], "count": 0, "truncated": False})
            return
        if find_rg() is None:
            files = await asyncio.to_thread(_python_glob, base, pattern)
        else:
            # The pattern's literal leading folders are the walk's root, so a pattern naming an
            # ignored folder (`node_modules/**/*.js`) lists it, as Claude Code does.
            with _prefilter(pattern) as ignore_file:
                run = await run_rg(["--files", "--hidden", "--glob", "!.git", *ignore_file, folder or "."],
                                   base, ctx.abort)
            if run.aborted:
                yield ToolResult("Interrupted by user", is_error=True)
                return
            if run.returncode not in (0, 1) and not run.stdout:
                yield ToolResult(f"Glob failed: {run.stderr.strip()}", is_error=True)
                return
            lines = run.stdout.decode("utf-8", "replace").splitlines()
            root = str(base).rstrip(os.sep) + os.sep
            if ignore_file:
                # gitignore's `*`, `?`, `[...]` and `**/` are the glob's own: ripgrep matched exactly
                files = [root + line.removeprefix("./") for line in lines if line]
            else:
                match = glob_regex(pattern).fullmatch
                files = [root + rel for line in lines if line and match(rel := line.removeprefix("./"))]
        if ctx.read_denied is not None:
            files = [f for f in files if not ctx.read_denied(f)]
        files = await asyncio.to_thread(sort_by_mtime, files)
        truncated = len(files) > MAX_RESULTS
        shown = files[:MAX_RESULTS]
        data = {"files": shown, "count": len(files), "truncated": truncated}
        if not shown:
            yield ToolResult("No files found", data=data)
            return
        listed = [model_path(f, ctx.cwd) for f in shown]
        yield ToolResult("\n".join(listed + ([TRUNCATED_NOTE] if truncated else [])), data=data)


@contextlib.contextmanager
def _prefilter(pattern: str) -> Iterator[list[str]]:
    """ripgrep's arguments that leave out most files the pattern cannot match, as the walk goes.

    Not `--glob`: its whitelists override .gitignore, so ignored files would be listed.  An
    ignore file of ripgrep's ranks below the repository's own, so "ignore everything, except
    folders and the pattern" narrows the walk and .gitignore still wins.  The pattern is
    translated only where gitignore's `*`, `?`, `[...]` and `**` mean what the glob's do (its
    `{a,b}` become one line each), so what ripgrep lists is what the pattern matches; one that
    does not translate gets no prefilter and is matched here instead.
    """
    lines = _gitignore_lines(pattern)
    if not lines:
        yield []
        return
    fd, path = tempfile.mkstemp(prefix="agent-tui-glob-", suffix=".ignore")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("\n".join(["*", "!*/", *("!" + line for line in lines)]) + "\n")
        yield ["--ignore-file", path]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _gitignore_lines(pattern: str) -> list[str]:
    """`pattern` (anchored, `{a,b}` alternations) as gitignore lines, or [] when it has a
    character gitignore reads otherwise."""
    if any(c in pattern for c in "\\\n\r#!") or pattern != pattern.strip():
        return []
    if any("**" in part and part != "**" for part in pattern.split("/")):
        return []  # gitignore reads `a**b` as `a*b`; the glob lets it cross folders
    expanded = [pattern]
    for _ in range(_MAX_BRACE_EXPANSIONS):
        more = [alt for p in expanded for alt in _expand_once(p)]
        if more == expanded:
            return expanded if all("{" not in p and "}" not in p for p in expanded) else []
        expanded = more
        if len(expanded) > _MAX_BRACE_EXPANSIONS:
            return []
    return []


def _expand_once(pattern: str) -> list[str]:
    """The alternatives of the first innermost `{a,b}` in `pattern` ([pattern] when it has none)."""
    end = pattern.find("}")
    start = pattern.rfind("{", 0, end) if end > 0 else -1
    if start < 0:
        return [pattern]
    head, body, tail = pattern[:start], pattern[start + 1:end], pattern[end + 1:]
    return [head + alt + tail for alt in body.split(",")]


def _literal_folder(pattern: str) -> str:
    """The leading folders of an anchored glob that hold no glob characters ("" for none)."""
    literal: list[str] = []
    for part in pattern.lstrip("/").split("/")[:-1]:
        if _GLOB_CHARS & set(part) or part in ("", ".", ".."):
            break
        literal.append(part)
    return "/".join(literal)


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
