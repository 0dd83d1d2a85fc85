"""Write, Edit and MultiEdit's shared shape: plan a change, show its diff, commit it (and record the write)."""

from __future__ import annotations

import abc
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..paths import shown_path
from ._fileio import FileSnapshot, FileToolError, PlannedChange, diff_counts, encode, read_snapshot
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
    diff = change.diff(ctx.cwd)
    added, removed = diff_counts(diff)
    return {"path": str(snap.path), "diff": diff, "added": added, "removed": removed, "created": change.created}


class FileChangeTool(BaseTool, abc.ABC):
    """Write, Edit and MultiEdit: plan a change, show its diff, commit it.

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
    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: PinnedFolder | None = None) -> PlannedChange:
        """The change `input` makes to the file now on disk (read through `folder` when given)."""

    @abc.abstractmethod
    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        """The text the model gets after the change was written."""

    def path_of(self, input: dict[str, Any], ctx: ToolContext) -> Path:
        return Path(os.path.abspath(resolve_path(str(input["file_path"]), ctx.cwd)))

    def snapshot(self, path: Path, folder: PinnedFolder | None) -> FileSnapshot:
        """The file now: through the pinned folder in `call`, by path before the permission check."""
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

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        try:
            self.plan(input, ctx)
        except FileToolError as exc:
            return str(exc)
        return None

    async def permission_preview(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        """The unified diff the call would make, without writing; None when it would fail."""
        try:
            return self.plan(input, ctx).diff(ctx.cwd)
        except FileToolError:
            return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
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
