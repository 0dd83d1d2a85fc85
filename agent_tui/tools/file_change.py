"""Write, Edit, MultiEdit and NotebookEdit's shared shape: plan a change, show its diff, commit it
(and record the write)."""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..paths import shown_path
from ._fileio import (
    CRLF,
    LF,
    FileSnapshot,
    FileToolError,
    PlannedChange,
    SnapshotSource,
    detect_line_ending,
    diff_counts,
    encode,
    normalize_newlines,
    read_snapshot,
)
from .base import BaseTool, Progress, ToolContext, ToolResult, resolve_path
from .file_state import record_write
from .pinned import PinnedFolder, PinnedTarget, open_pinned, pin


def commit(change: PlannedChange, ctx: ToolContext, folder: PinnedFolder) -> dict[str, Any]:
    """Write the planned change into the pinned folder, tell the read-state cache, and return the front-end data."""
    snap = change.snapshot
    try:
        data = encode(change.new_text, snap)
    except UnicodeEncodeError as exc:
        raise FileToolError(f"The new content cannot be encoded for {snap.path}: {exc.reason}") from exc
    try:
        folder.write(data, snap.mode)
    except OSError as exc:
        raise FileToolError(f"Failed to write {snap.path}: {exc.strerror or exc}") from exc
    record_write(ctx.state, snap.path, data)
    return change_data(change, ctx)


def change_data(change: PlannedChange, ctx: ToolContext) -> dict[str, Any]:
    """What front ends get of a written change: the path, its unified diff and line counts."""
    diff = change.diff(ctx.cwd)
    added, removed = diff_counts(diff)
    return {"path": str(change.path), "diff": diff, "added": added, "removed": removed, "created": change.created}


@dataclasses.dataclass(frozen=True, slots=True)
class EditorBuffer:
    """The file as the editor holds it (`ctx.files`, docs/architecture.md §8): what a plan reads in
    place of the disk, unsaved changes included."""

    buffer: FileSnapshot

    def snapshot(self) -> FileSnapshot:
        return self.buffer


async def editor_buffer(path: Path, ctx: ToolContext) -> EditorBuffer | None:
    """`path` as the editor holds it; None when the editor does not read files or the file does
    not exist yet (the disk says what there is, the editor only holds files that exist)."""
    files = ctx.files
    if files is None or not files.reads:
        return None
    on_disk = read_snapshot(path)
    if not on_disk.exists:
        return None
    try:
        text = await files.read_text(path)
    except Exception as exc:  # the editor's error, whatever it is, is the tool's result
        raise FileToolError(f"Cannot read {path} from the editor: {exc}") from exc
    return EditorBuffer(dataclasses.replace(
        on_disk, text=normalize_newlines(text), line_ending=detect_line_ending(text), encoding=None))


async def commit_in_editor(change: PlannedChange, ctx: ToolContext, target: Path) -> dict[str, Any]:
    """Hand the planned change to the editor (its buffer, which it saves as it does), with the
    file's own line endings; the read-state cache learns the new text."""
    assert ctx.files is not None
    text = change.new_text
    if change.snapshot.line_ending == CRLF:
        text = normalize_newlines(text).replace(LF, CRLF)
    try:
        await ctx.files.write_text(target, text)
    except Exception as exc:  # the editor's error, whatever it is, is the tool's result
        raise FileToolError(f"The editor could not write {change.path}: {exc}") from exc
    record_write(ctx.state, change.path, text)
    return change_data(change, ctx)


class FileChangeTool(BaseTool, abc.ABC):
    """Write, Edit, MultiEdit and NotebookEdit: plan a change, show its diff, commit it.

    `plan` raises FileToolError with the result text when the change cannot
    be made; it runs in `validate` (before the permission prompt), in
    `permission_preview` (for the diff) and again in `call`, since the file
    may change while the person decides.  In `call` it reads, and the change
    is written, through the folder `pin` identified right after the permission
    decision (`pinned.py`): if that folder is not the one checked any more,
    the call refuses and nothing is written.
    """

    def __init__(self, cwd: Path | None = None) -> None:
        # Only for `summarize`, which gets no context; calls use ctx.cwd.
        self._cwd = cwd

    @abc.abstractmethod
    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: SnapshotSource | None = None) -> PlannedChange:
        """The change `input` makes to the file now on disk (read through `folder` when given)."""

    @abc.abstractmethod
    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        """The text the model gets after the change was written."""

    def path_of(self, input: dict[str, Any], ctx: ToolContext) -> Path:
        return Path(os.path.abspath(resolve_path(str(input["file_path"]), ctx.cwd)))

    def snapshot(self, path: Path, folder: SnapshotSource | None) -> FileSnapshot:
        """The file now: through the pinned folder (or the editor's buffer) in `call`, by path before
        the permission check."""
        return read_snapshot(path) if folder is None else folder.snapshot()

    def pin(self, input: dict[str, Any], ctx: ToolContext, resolved: str | None) -> PinnedTarget:
        """The file the permission decision was made on (`resolved`), its folder identified now."""
        return pin(self.path_of(input, ctx), resolved)

    def summarize(self, input: dict[str, Any]) -> str:
        file_path = input.get("file_path")
        if not isinstance(file_path, str):
            return ""
        cwd = self._cwd if self._cwd is not None else Path.cwd()
        return shown_path(resolve_path(file_path, cwd), cwd, home=False)

    def hook_response(self, input: dict[str, Any], result: ToolResult, text: str) -> dict[str, Any]:
        """Claude Code's keys that hook scripts read (`filePath`, `type`, `success`), then ours."""
        data = result.data
        response: dict[str, Any] = {"filePath": data.get("path", ""), "success": not result.is_error}
        if "created" in data:
            response["type"] = "create" if data["created"] else "update"
        return {**response, "result": text, **data}

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        try:
            self.plan(input, ctx, await editor_buffer(self.path_of(input, ctx), ctx))
        except FileToolError as exc:
            return str(exc)
        return None

    async def permission_preview(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        """The unified diff the call would make, without writing; None when it would fail."""
        try:
            return self.plan(input, ctx, await editor_buffer(self.path_of(input, ctx), ctx)).diff(ctx.cwd)
        except FileToolError:
            return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        if ctx.files is not None and ctx.files.writes:
            yield await self._call_in_editor(input, ctx)
            return
        pinned = ctx.pinned
        if not isinstance(pinned, PinnedTarget) or pinned.path != self.path_of(input, ctx):
            # Called without a permission check (a direct call): pinned now, still read and written in one folder.
            pinned = self.pin(input, ctx, None)
        try:
            with open_pinned(pinned) as folder:
                change = self.plan(input, ctx, folder)
                data = commit(change, ctx, folder)
        except FileToolError as exc:
            yield ToolResult(str(exc), is_error=True)
            return
        yield ToolResult(self.result_text(input, change), data=data)

    async def _call_in_editor(self, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The change made in the editor's buffer: planned on what the editor holds, written to the
        file the permission decision was made on."""
        path = self.path_of(input, ctx)
        pinned = ctx.pinned
        target = pinned.target if isinstance(pinned, PinnedTarget) and pinned.path == path else path
        try:
            change = self.plan(input, ctx, await editor_buffer(path, ctx))
            data = await commit_in_editor(change, ctx, target)
        except FileToolError as exc:
            return ToolResult(str(exc), is_error=True)
        return ToolResult(self.result_text(input, change), data=data)
