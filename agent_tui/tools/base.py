"""The Tool protocol every tool implements, and the values tools exchange with the executor.

A tool is a plain object with Claude Code's name and input schema.  The
executor calls, in order: `validate_input` (schema, then the tool's own
`validate`), the permission policy, `pin` (what the decision was made on,
before a prompt shows `permission_preview`), then `call`, an async generator
that yields `Progress` (and TodoWrite's `TodoList`) and finally one
`ToolResult`.  `is_read_only` and
`is_concurrency_safe` default to False: a tool must opt in to running in
parallel (fail closed).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(slots=True)
class Progress:
    """A line of live output from a running tool (shown in the UI, not sent to the model)."""

    text: str


@dataclass(slots=True)
class TodoList:
    """TodoWrite's new plan, the whole list: the executor publishes it as `todo_updated`."""

    todos: list[dict[str, Any]]


@dataclass(slots=True)
class ToolResult:
    """What a tool call produced.

    `content` goes to the model as the tool_result; `data` goes to front ends
    only (full output, a unified diff, line counts, the hit list).
    """

    content: str | list[dict[str, Any]]
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    # The person answered a permission request inside the call "no" (a subagent's tool):
    # the turn ends as after a plain no at the top level.
    ends_turn: bool = False


@runtime_checkable
class ReadDenyCheck(Protocol):
    """The session's Read deny rules, as search tools apply them to what they find."""

    def __call__(self, path: str) -> bool:
        """A rule covers `path` (absolute and resolved)."""
        ...

    def may_cover(self, root: str, names: str) -> bool:
        """A rule may cover one of `names` (paths relative to the folder `root`, which ends in a
        separator, one a line); False lets a search keep them all without checking each."""
        ...


class EditorFiles(Protocol):
    """Files as the editor driving the session holds them (an ACP client's `fs/*` methods,
    docs/architecture.md §8): Read, Write, Edit and MultiEdit go through it, so the model sees and
    changes the editor's unsaved buffers.  `reads` / `writes`: which half the editor offers (the
    other goes to the disk)."""

    reads: bool
    writes: bool

    async def read_text(self, path: Path) -> str: ...

    async def write_text(self, path: Path, text: str) -> None: ...


@dataclass
class ToolContext:
    """What a tool may use while it runs."""

    cwd: Path
    # Set when the user aborts; long-running tools should stop promptly.
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    # Folder for this session's artefacts (saved large outputs).
    session_dir: Path | None = None
    # Shared per-session state tools may keep (e.g. the read-state cache).
    state: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""
    # True for a path a Read deny rule covers: search and listing tools leave it out of their results.
    # It takes an absolute, resolved path (as a walk from a resolved root yields them) and makes no
    # system call; None when no rule could deny anything.
    read_denied: ReadDenyCheck | None = None
    # The model the query is using when the tool runs (the fallback model after a fallback).
    model: str = ""
    # Other directories the session works in (additionalDirectories, /add-dir): writable in the Bash sandbox.
    working_dirs: tuple[Path, ...] = ()
    # What `pin` captured right after the permission decision (a file tool's checked target and folder):
    # the call works on that or refuses.  None: the call was not checked (a direct call).
    pinned: Any = None
    # The editor's buffers in place of the disk for the file tools (an ACP client); None: the disk.
    files: EditorFiles | None = None


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    input_schema: dict[str, Any]

    def is_read_only(self, input: dict[str, Any]) -> bool: ...

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool: ...

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        """A specific error message when the input cannot run, else None."""
        ...

    def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | TodoList | ToolResult]: ...

    def summarize(self, input: dict[str, Any]) -> str:
        """A one-line description of the call for timelines and prompts."""
        ...

    async def permission_preview(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        """The unified diff the permission prompt shows before the person decides (None: no diff)."""
        ...

    def attach_session(self, session: Any) -> None:
        """Called once by the session that runs this tool."""
        ...

    def sandbox_auto_allows(self, input: dict[str, Any]) -> bool:
        """Whether acceptEdits may run this call unasked because a sandbox contains it."""
        ...

    def pin(self, input: dict[str, Any], ctx: ToolContext, resolved: str | None) -> Any:
        """What the call must find unchanged when it runs, captured right after the permission
        decision and before any prompt waits; `resolved` is the path the decision was made on (None:
        no path).  `call` gets it as `ctx.pinned`; None: nothing to pin."""
        ...

    def unsandboxed_warning(self) -> str | None:
        """What the session says at start when the tool cannot run sandboxed (None: nothing)."""
        ...

    def hook_response(self, input: dict[str, Any], result: ToolResult, text: str) -> dict[str, Any]:
        """PostToolUse hooks' `tool_response`: the result in the keys Claude Code's tool gives them."""
        ...


class BaseTool:
    """Defaults for the optional parts of the protocol (fail closed)."""

    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] = {}

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return False

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return False

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        return None

    def summarize(self, input: dict[str, Any]) -> str:
        for key in ("command", "file_path", "pattern", "path", "description"):
            if isinstance(input.get(key), str):
                return one_line(input[key], 80)
        return ""

    async def permission_preview(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        return None

    # `Any`: tools sit below the engine and cannot name its Session; only the Agent tool keeps it.
    def attach_session(self, session: Any) -> None:
        return None

    def sandbox_auto_allows(self, input: dict[str, Any]) -> bool:
        return False

    def pin(self, input: dict[str, Any], ctx: ToolContext, resolved: str | None) -> Any:
        return None

    def unsandboxed_warning(self) -> str | None:
        return None

    def hook_response(self, input: dict[str, Any], result: ToolResult, text: str) -> dict[str, Any]:
        return {"result": text, **result.data}


class ReadOnlyTool(BaseTool):
    """A tool that never changes anything: allowed inside the working directories
    and run in parallel with other safe tools."""

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return True


def one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_path(path: str, cwd: Path) -> str:
    """`path` (absolute) as a result shows it to the model: relative to `cwd` when inside it
    (fewer tokens, and every later request pays for them), else absolute.  Tools resolve a
    relative path against `cwd` (`resolve_path`), so either form reads back the same file."""
    for prefix in _cwd_prefixes(str(cwd)):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


@functools.lru_cache(maxsize=16)
def _cwd_prefixes(cwd: str) -> tuple[str, ...]:
    # a session at the root of the file system shows absolute paths: relative ones would read oddly
    roots = (cwd, os.path.realpath(cwd))
    return tuple(dict.fromkeys(root.rstrip(os.sep) + os.sep for root in roots if root.rstrip(os.sep)))


def resolve_path(path: str, cwd: Path) -> Path:
    """An absolute path for a tool's `file_path`/`path`, relative ones against cwd."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (cwd / p)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


async def validate_input(tool: Tool, input: dict[str, Any], ctx: ToolContext) -> str | None:
    """The schema, then the tool's own checks: what stands between a tool_use and `call`."""
    problem = validate_schema(tool.input_schema, input)
    return problem if problem is not None else await tool.validate(input, ctx)


def validate_schema(schema: dict[str, Any], value: Any, path: str = "") -> str | None:
    """Check `value` against the subset of JSON Schema tool schemas use.

    Returns Claude Code style text ("InputValidationError: …") or None.
    """
    problem = _check(schema, value, path)
    return None if problem is None else f"InputValidationError: {problem}"


def _check(schema: dict[str, Any], value: Any, path: str) -> str | None:
    typ = schema.get("type")
    where = path or "input"
    if typ is not None:
        types = _JSON_TYPES.get(typ, (object,))
        ok = isinstance(value, types) and not (typ in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return f"The parameter `{where}` type is expected as `{typ}` but provided as `{_type_name(value)}`"
    if "enum" in schema and value not in schema["enum"]:
        return f"The parameter `{where}` must be one of {schema['enum']}, got {value!r}"
    if typ == "object" and isinstance(value, dict):
        for req in schema.get("required", []):
            if req not in value:
                return f"The required parameter `{_join(path, req)}` is missing"
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    return f"An unexpected parameter `{_join(path, key)}` was provided"
        for key, sub in props.items():
            if key in value:
                problem = _check(sub, value[key], _join(path, key))
                if problem:
                    return problem
    if typ == "array" and isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problem = _check(schema["items"], item, f"{where}[{i}]")
            if problem:
                return problem
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, types) and not (name in ("integer", "number") and isinstance(value, bool)):
            return name
    return "null" if value is None else type(value).__name__


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Look-up by the name the model uses in tool_use blocks; a duplicate name is a bug."""
    table: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in table:
            raise ValueError(f"two tools are named {tool.name!r}")
        table[tool.name] = tool
    return table


def with_tools(tools: Sequence[Tool], extra: Iterable[Tool]) -> tuple[list[Tool], list[str]]:
    """`tools` plus those of `extra` whose names are free, and the names left out:
    a server's tool never shadows a built-in or an earlier server's tool."""
    merged, taken, shadowed = list(tools), {t.name for t in tools}, []
    for tool in extra:
        if tool.name in taken:
            shadowed.append(tool.name)
        else:
            merged.append(tool)
            taken.add(tool.name)
    return merged, shadowed


def tool_to_api(tool: Tool) -> dict[str, Any]:
    """The tool as the Messages API's `tools` list takes it (a server tool: its API definition)."""
    server_definition = getattr(tool, "server_definition", None)
    if server_definition is not None:
        return server_definition()
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
