"""Glob: file paths matching a pattern, newest first (ripgrep's file walker, .gitignore aware)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import heapq
import os
import re
import shutil
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui.tools.base import (
    Progress,
    ReadDenyCheck,
    ReadOnlyTool,
    ToolContext,
    ToolResult,
    model_path,
    resolve_path,
)
from agent_tui.tools.globs import glob_to_regex
from agent_tui.tools.grep import MAX_OUTPUT_BYTES, find_rg, run_rg

MAX_RESULTS = 100
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
_GLOB_CHARS = set("*?[{")
# More alternatives than this from `{a,b}` and the pattern is matched without a prefilter.
_MAX_BRACE_EXPANSIONS = 64
# ripgrep walks in one thread: its parallel walk cost 1.2-1.6x the CPU on a 2-core machine, and the
# other core stats what it has listed so far (docs/architecture.md §4).
_RG_THREADS = ["--threads", "1"]
# ripgrep's output pipe (Linux lets a process grow its own to 1 MB): it seldom waits on the stats.
_PIPE_BYTES = 1 << 20
# The file type a pattern's file name part becomes; a name that ripgrep's type syntax reads
# otherwise (`,` and `:` separate definitions, `\\` escapes) is matched here instead.
_TYPE = "agentglob"
_TYPE_GLOB = re.compile(r"(?:[^\[\],:\\{}\n\r]|\[!?[^\[\]/\n\r!^][^\[\]/\n\r]*\])+")

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
        newest = _Newest(str(base).rstrip(os.sep) + os.sep, ctx.read_denied)
        try:
            failed = await _list(newest, base, pattern, folder, ctx)
        finally:
            newest.close()
        if failed is not None:
            yield failed
            return
        shown, count = await newest.result()
        truncated = count > MAX_RESULTS
        data = {"files": shown, "count": count, "truncated": truncated}
        if not shown:
            yield ToolResult("No files found", data=data)
            return
        listed = [model_path(f, ctx.cwd) for f in shown]
        yield ToolResult("\n".join(listed + ([TRUNCATED_NOTE] if truncated else [])), data=data)


async def _list(newest: _Newest, base: Path, pattern: str, folder: str, ctx: ToolContext) -> ToolResult | None:
    """Have `newest` take the files under `base` that `pattern` matches; an error result if that failed."""
    if find_rg() is None:
        newest.add(await asyncio.to_thread(_python_glob, base, pattern))
        return None
    # The pattern's literal leading folders are the walk's root, so a pattern naming an ignored
    # folder (`node_modules/**/*.js`) lists it, as Claude Code does.
    told = _rg_filter(pattern, folder)
    if not told.exact:  # ripgrep lists more than the pattern matches
        newest.match = glob_regex(pattern).fullmatch
    parents = await _parent_args(base / folder)
    run = await run_rg(["--files", "--hidden", "--glob", "!.git", *_RG_THREADS, *parents, *told.args,
                        *(["--", folder] if folder else [])], base, ctx.abort, stdout=newest.stdout)
    if run.aborted:
        return ToolResult("Interrupted by user", is_error=True)
    if run.returncode not in (0, 1) and not await newest.fed():
        return ToolResult(f"Glob failed: {run.stderr.strip()}", is_error=True)
    return None


class _Newest:
    """The newest of the files ripgrep lists, read from its pipe and stat'd in a thread of their
    own while it still walks.

    The thread reads whatever ripgrep has written so far in one call (no event-loop round trip per
    block of its output), matches the lines (when ripgrep could not be told the pattern), checks
    them against the Read deny rules, stats them and picks the newest `MAX_RESULTS` once ripgrep
    is done.  Paths stay `str` with undecodable bytes as surrogates, so the stat names the exact
    file.
    """

    def __init__(self, root: str, denied: ReadDenyCheck | None) -> None:
        self.root = root
        self.denied = denied
        self.match: Callable[[str], object] | None = None
        self._found: list[str] = []
        self._read, self._write = os.pipe()
        with contextlib.suppress(AttributeError, OSError):  # room for ripgrep to run ahead of the stats
            fcntl.fcntl(self._write, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._loop = asyncio.get_running_loop()
        self._done: asyncio.Future[tuple[list[tuple[int, str]], int, bool]] = self._loop.create_future()
        threading.Thread(target=self._run, name="glob-stat", daemon=True).start()

    @property
    def stdout(self) -> int:
        """The pipe's end that ripgrep writes its listing to."""
        return self._write

    def add(self, paths: list[str]) -> None:
        """Absolute paths found without ripgrep (already matched); before `close`."""
        self._found = [p.removeprefix(self.root) for p in paths]

    def close(self) -> None:
        """No more paths: the thread ends once it has done those it has."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    async def fed(self) -> bool:
        """ripgrep listed something."""
        return (await self._done)[2]

    async def result(self) -> tuple[list[str], int]:
        """The newest `MAX_RESULTS` (absolute, newest first, then by path) and how many there were."""
        self.close()
        best, count, _ = await self._done
        return [_printable(path) for _, path in best], count

    def _run(self) -> None:
        times: list[int] = []
        paths: list[str] = []
        try:
            fed = self._read_all(times, paths)
            if len(paths) > MAX_RESULTS:  # tuples only for the newest
                oldest = heapq.nlargest(MAX_RESULTS, times)[-1]
                best = sorted((-t, p) for t, p in zip(times, paths, strict=True) if t >= oldest)[:MAX_RESULTS]
            else:
                best = sorted((-t, p) for t, p in zip(times, paths, strict=True))
        except BaseException as exc:  # handed to the waiting coroutine
            self._settle(self._done.set_exception, exc)
        else:
            self._settle(self._done.set_result, (best, len(paths), fed))

    def _read_all(self, times: list[int], paths: list[str]) -> bool:
        """Stat every whole line ripgrep writes, until it is done; whether it wrote any."""
        read, fd, tail, size = os.read, self._read, b"", 0
        try:
            while size < MAX_OUTPUT_BYTES and (chunk := read(fd, _PIPE_BYTES)):
                size += len(chunk)
                data = tail + chunk if tail else chunk
                cut = data.rfind(b"\n") + 1
                tail = data[cut:]
                if cut:
                    self._stat(os.fsdecode(data[:cut - 1]), times, paths)
        finally:
            os.close(fd)  # past the limit, ripgrep's next write fails and it stops
        if tail:
            self._stat(os.fsdecode(tail), times, paths)
        if self._found:
            self._stat("\n".join(self._found), times, paths)
        return size > 0

    def _settle(self, setter: Callable[[Any], object], value: object) -> None:
        def settle() -> None:
            if not self._done.done():
                setter(value)

        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(settle)

    def _stat(self, names: str, times: list[int], paths: list[str]) -> None:
        """Add the modification times (ns) and absolute paths of the listed files (relative to the
        root, one a line) to show."""
        root, match, denied = self.root, self.match, self.denied
        if match is None:
            block = [root + line for line in names.split("\n") if line]
        else:
            block = [root + line for line in names.split("\n") if line and match(line)]
        if denied is not None and denied.may_cover(root, names):
            block = [path for path in block if not denied(path)]
        stat = os.stat
        try:
            times.extend([stat(path).st_mtime_ns for path in block])
        except OSError:
            times.extend([_mtime(path) for path in block])
        paths.extend(block)


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0  # vanished since: sorts last


def _printable(path: str) -> str:
    """`path` with the bytes that are not UTF-8 shown as U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _RgFilter:
    """How ripgrep is told the pattern: its arguments, and whether it then lists exactly the
    files the pattern matches (else each listed path is matched here too)."""

    args: list[str]
    exact: bool


def _rg_filter(pattern: str, folder: str) -> _RgFilter:
    """ripgrep's arguments that leave out, as it walks, the files the pattern cannot match.

    The pattern's file name part becomes a file type of ripgrep's (`--type-add`): a type has
    the last word on a file after the ignore files have spoken, so `.gitignore` still wins and
    its whitelist lines (`!.gitignore`) add nothing, which neither `--glob` (a whitelist that
    overrides `.gitignore`) nor an ignore file of ripgrep's (ranked below the repository's)
    gives.  Its folders part becomes `--max-depth` where its depth is fixed; only folders of
    `**` need no match here.  `{a,b}` is expanded first (at most 64 alternatives).
    """
    alternatives = _expand_braces(pattern)
    if alternatives is None:
        return _RgFilter([], exact=False)
    prefix = "/" + folder + "/" if folder else "/"
    splits = [alt.removeprefix(prefix).split("/") for alt in alternatives]
    folders = {tuple(parts[:-1]) for parts in splits}
    names = {parts[-1] for parts in splits}
    any_depth = "**" in names or any("**" in part for parts in folders for part in parts)
    exact = all(part == "**" for parts in folders for part in parts) and (any_depth or folders == {()})
    args: list[str] = []
    if not any_depth and len({len(parts) for parts in folders}) == 1:
        args += ["--max-depth", str(len(next(iter(folders))) + 1)]
    if any("**" in name for name in names) and names != {"**"}:
        return _RgFilter(args, exact=False)  # `a**b` crosses folders
    if "*" in names or "**" in names:
        return _RgFilter(args, exact=exact)  # any file name
    if not all(_TYPE_GLOB.fullmatch(name) for name in names):
        return _RgFilter(args, exact=False)
    for name in sorted(names):
        args += ["--type-add", f"{_TYPE}:{name}"]
    return _RgFilter([*args, "--type", _TYPE], exact=exact)


def _parents(root: Path) -> list[str]:
    """`--no-ignore-parent` when ripgrep would find nothing above `root` that it honours anyway.

    With parent folders to consult, ripgrep joins every path it lists to the root's absolute path
    (15-20% of its CPU on a tree of small folders, docs/architecture.md §4).  Above a
    git repository's root it honours only `.ignore` and `.rgignore` files (never a `.gitignore`);
    inside one it needs the repository above to know its `.gitignore` rules apply at all.
    """
    parents = root.parents
    if not (root / ".git").exists() and any((folder / ".git").exists() for folder in parents):
        return []
    if any((folder / name).exists() for folder in parents for name in (".ignore", ".rgignore")):
        return []
    return ["--no-ignore-parent"]


async def _parent_args(root: Path) -> list[str]:
    """ripgrep's options for the folders above `root`: none are read for a folder git ignores.

    A pattern naming an ignored folder lists it as Claude Code does, whose Glob runs with
    `--no-ignore`: the rules of the repository above are not applied inside it, which spares
    ripgrep joining every path to the root's absolute path (docs/architecture.md §4).
    """
    parents = _parents(root)
    if parents or not await _git_ignores(root):
        return parents
    return ["--no-ignore-parent"]


async def _git_ignores(folder: Path) -> bool:
    """git ignores `folder` (by its ignore files; the index is not read, as ripgrep does not)."""
    git = shutil.which("git")
    if git is None:
        return False
    try:
        proc = await asyncio.create_subprocess_exec(
            git, "check-ignore", "-q", "--no-index", "--", str(folder), cwd=folder,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return False
    try:
        return await proc.wait() == 0
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()


def _expand_braces(pattern: str) -> list[str] | None:
    """`pattern`'s `{a,b}` alternations expanded, or None when there are too many or they do
    not balance."""
    expanded = [pattern]
    for _ in range(_MAX_BRACE_EXPANSIONS):
        more = [alt for p in expanded for alt in _expand_once(p)]
        if more == expanded:
            return expanded if all("{" not in p and "}" not in p for p in expanded) else None
        expanded = more
        if len(expanded) > _MAX_BRACE_EXPANSIONS:
            return None
    return None


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
