"""Write: create a file or replace one the model has read (Claude Code's `Write`)."""

from __future__ import annotations

from typing import Any

from ._fileio import (
    FileToolError,
    PlannedChange,
    SnapshotSource,
    created_message,
    normalize_newlines,
    numbered_file,
    updated_message,
)
from .base import ToolContext
from .file_change import FileChangeTool
from .file_state import check_writable

# The model's text, one line per paragraph or bullet, as Claude Code words it.
DESCRIPTION = """Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested by the User.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked."""  # noqa: E501


class WriteTool(FileChangeTool):
    name = "Write"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": "The absolute path to the file to write (must be absolute, not relative)",
            },
            "content": {"type": "string", "description": "The content to write to the file"},
        },
        "required": ["file_path", "content"],
        "additionalProperties": False,
    }

    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: SnapshotSource | None = None) -> PlannedChange:
        path = self.path_of(input, ctx)
        snapshot = self.snapshot(path, folder)
        if snapshot.exists:
            problem = check_writable(ctx.state, path)
            if problem:
                raise FileToolError(problem)
        return PlannedChange(snapshot, str(input["content"]))

    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        if change.created:
            return created_message(change.path)
        return updated_message(change.path, numbered_file(normalize_newlines(change.new_text)))
