"""Grep: ripgrep searches with Claude Code's input schema and output formats.

Also home to `find_rg` and `run_rg`, which Glob shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import sys
import sysconfig
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
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

# Enough for any sane search; a runaway pattern is stopped rather than buffered without end.
MAX_OUTPUT_BYTES = 20_000_000
MAX_COLUMNS = 500
_LINE = re.compile(r"(\d+)([:-])(.*)", re.DOTALL)

DESCRIPTION = """\
A powerful search tool built on ripgrep.

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
- Supports full regex syntax (e.g. "log.*Error", "function\\s+\\w+").
- Filter files with the glob parameter (e.g. "*.js", "**/*.tsx") or the type parameter (e.g. "js", "py", "rust").
- Output modes: "content" shows matching lines (path:line:text), "files_with_matches" shows only \
file paths (default), "count" shows match counts per file.
- Pattern syntax: uses ripgrep, not grep — literal braces need escaping (use `interface\\{\\}` \
to find `interface{}` in Go code).
- Multiline matching: by default patterns match within single lines only. For cross-line patterns \
like `struct \\{[\\s\\S]*?field`, use `multiline: true`.
- Use head_limit to see only the first N lines or entries of a large result."""


@functools.cache
def find_rg() -> str | None:
    """The ripgrep binary: the `ripgrep` wheel puts it beside the interpreter, else PATH."""
    name = "rg.exe" if os.name == "nt" else "rg"
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


@dataclass(slots=True)
class RgRun:
    returncode: int
    stdout: bytes
    stderr: str
    aborted: bool = False


async def run_rg(args: list[str], cwd: Path, abort: asyncio.Event, *, stdout: int | None = None) -> RgRun:
    """Run ripgrep with `args`; stop it when `abort` is set or the caller is cancelled.

    With `stdout` (a pipe's write end), ripgrep's output goes there for the caller to read (the
    result's stdout is empty).
    """
    rg = find_rg()
    if rg is None:
        raise FileNotFoundError("ripgrep (rg) was not found; install the `ripgrep` package")
    proc = await asyncio.create_subprocess_exec(
        rg,
        "--no-config",
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if stdout is None else stdout,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    chunks: list[bytes] = []

    async def read_stdout() -> None:
        if proc.stdout is None:
            return
        size = 0
        while chunk := await proc.stdout.read(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size >= MAX_OUTPUT_BYTES:
                proc.kill()
                return

    work = asyncio.gather(read_stdout(), proc.stderr.read(), proc.wait())
    aborted = asyncio.ensure_future(abort.wait())
    try:
        await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            _kill(proc)
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)  # retrieve the cancellation
            return RgRun(-1, b"".join(chunks), "", aborted=True)
        _, stderr, code = work.result()
        return RgRun(code, b"".join(chunks), stderr.decode("utf-8", "replace"))
    except BaseException:
        _kill(proc)
        work.cancel()
        work.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieve it later
        raise
    finally:
        aborted.cancel()
        with contextlib.suppress(ProcessLookupError):
            if proc.returncode is None:
                await asyncio.shield(proc.wait())


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def sort_by_mtime(paths: list[str]) -> list[str]:
    """Newest first; files that vanished sort last."""

    def mtime(path: str) -> float:
        try:
            return os.stat(path).st_mtime
        except OSError:
            return 0.0

    return sorted(paths, key=lambda p: (-mtime(p), p))


class GrepTool(ReadOnlyTool):
    name = "Grep"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "The regular expression pattern to search for in file contents",
            },
            "path": {
                "type": "string",
                "description": "File or directory to search in (rg PATH). Defaults to current working directory.",
            },
            "glob": {
                "type": "string",
                "description": 'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
            },
            "type": {
                "type": "string",
                "description": "File type to search (rg --type). Common types: js, py, rust, go, java, etc.",
            },
            "output_mode": {
                "type": "string",
                "enum": ["content", "files_with_matches", "count"],
                "description": 'Output mode: "content" shows matching lines, "files_with_matches" shows file '
                'paths (default), "count" shows match counts per file.',
            },
            "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
            "-n": {
                "type": "boolean",
                "description": "Show line numbers in output (rg -n). Requires output_mode: content. Defaults to true.",
            },
            "-A": {
                "type": "integer",
                "description": "Number of lines to show after each match (rg -A). Requires output_mode: content.",
            },
            "-B": {
                "type": "integer",
                "description": "Number of lines to show before each match (rg -B). Requires output_mode: content.",
            },
            "-C": {
                "type": "integer",
                "description": "Number of lines to show before and after each match (rg -C). "
                "Requires output_mode: content.",
            },
            "head_limit": {
                "type": "integer",
                "description": "Limit output to the first N lines/entries (like `| head -N`). "
                "Works in every output mode.",
            },
            "multiline": {
                "type": "boolean",
                "description": "Enable multiline mode where . matches newlines and patterns can span lines "
                "(rg -U --multiline-dotall). Default: false.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if "path" in input and not resolve_path(input["path"], ctx.cwd).exists():
            return f"Path does not exist: {input['path']}"
        for key in ("-A", "-B", "-C", "head_limit"):
            if input.get(key, 0) < 0:
                return f"{key} must not be negative."
        if find_rg() is None:
            return "ripgrep (rg) is not installed, so Grep cannot run."
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        mode = input.get("output_mode", "files_with_matches")
        target = resolve_path(input.get("path", "."), ctx.cwd).resolve()
        run = await run_rg(_rg_args(input, mode, target), ctx.cwd, ctx.abort)
        if run.aborted:
            yield ToolResult("Interrupted by user", is_error=True)
            return
        # exit 1 is "no match"; 2 with output means some files could not be read
        if run.returncode not in (0, 1) and not run.stdout:
            yield ToolResult(f"ripgrep failed: {run.stderr.strip() or f'exit code {run.returncode}'}", is_error=True)
            return
        text = run.stdout.decode("utf-8", "replace")
        if ctx.read_denied is not None:
            text = _without_denied(text, mode, ctx.read_denied)
        head_limit = input.get("head_limit") or None
        show = functools.partial(model_path, cwd=ctx.cwd)
        if mode == "files_with_matches":
            yield _files_result(text, head_limit, show)
        elif mode == "count":
            yield _count_result(text, head_limit, show)
        else:
            yield _content_result(text, head_limit, input.get("-n", True), show)


def _rg_args(input: dict[str, Any], mode: str, target: Path) -> list[str]:
    args = ["--hidden", "--glob", "!.git", "--color", "never", "--no-heading", "--null"]
    args += ["--max-columns", str(MAX_COLUMNS), "--max-columns-preview"]
    if input.get("-i"):
        args.append("-i")
    if input.get("multiline"):
        args += ["-U", "--multiline-dotall"]
    if input.get("type"):
        args += ["--type", input["type"]]
    if input.get("glob"):
        args += ["--glob", input["glob"]]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args += ["--count", "--with-filename"]
    else:
        args += ["--line-number", "--with-filename"]
        for key in ("-A", "-B", "-C"):
            if key in input:
                args += [key, str(input[key])]
    return args + ["-e", input["pattern"], "--", str(target)]


def _without_denied(text: str, mode: str, denied: Callable[[str], bool]) -> str:
    """ripgrep's output minus the files a Read deny rule covers (every output mode names the file first)."""
    if mode == "files_with_matches":
        return "\0".join(p for p in text.split("\0") if not (p.strip("\n") and denied(p.strip("\n"))))
    kept = [line for line in text.split("\n") if "\0" not in line or not denied(line.partition("\0")[0])]
    return "\n".join(kept)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _limited(items: list[Any], head_limit: int | None) -> list[Any]:
    return items if head_limit is None else items[:head_limit]


def _files_result(text: str, head_limit: int | None, show: Callable[[str], str]) -> ToolResult:
    files = sort_by_mtime([p for p in text.split("\0") if p.strip("\n")])
    if not files:
        return ToolResult("No files found", data={"matches": 0, "files": []})
    shown = _limited(files, head_limit)
    header = f"Found {_plural(len(files), 'file')}"
    if len(shown) < len(files):
        header += f" (showing the first {len(shown)})"
    return ToolResult("\n".join([header, *map(show, shown)]), data={"matches": len(files), "files": files})


def _count_result(text: str, head_limit: int | None, show: Callable[[str], str]) -> ToolResult:
    counts: list[tuple[str, int]] = []
    for line in text.splitlines():
        path, _, count = line.partition("\0")
        if count.isdigit():
            counts.append((path, int(count)))
    if not counts:
        return ToolResult("No matches found", data={"matches": 0, "files": []})
    total = sum(n for _, n in counts)
    lines = [f"{show(path)}:{n}" for path, n in _limited(counts, head_limit)]
    summary = f"Found {_plural(total, 'total occurrence')} across {_plural(len(counts), 'file')}."
    return ToolResult(
        "\n".join(lines) + "\n\n" + summary,
        data={"matches": total, "files": [path for path, _ in counts]},
    )


def _content_result(text: str, head_limit: int | None, line_numbers: bool, show: Callable[[str], str]) -> ToolResult:
    lines: list[str] = []
    files: list[str] = []
    matches = 0
    for raw in text.split("\n"):
        path, sep, rest = raw.partition("\0")
        if not sep:
            if raw == "--":
                lines.append(raw)
            continue
        found = _LINE.fullmatch(rest)
        if found is None:
            continue
        number, kind, body = found.groups()
        if kind == ":":
            matches += 1
        if not files or files[-1] != path:
            files.append(path)
        shown = show(path)
        lines.append(f"{shown}{kind}{number}{kind}{body}" if line_numbers else f"{shown}{kind}{body}")
    if not matches:
        return ToolResult("No matches found", data={"matches": 0, "files": []})
    shown = _limited(lines, head_limit)
    return ToolResult("\n".join(shown), data={"matches": matches, "files": list(dict.fromkeys(files))})
