"""MultiEdit: several Edits to one file, all or nothing (Claude Code's `MultiEdit`).

The edits are applied in order to the text in memory; the file is written
only when every one of them succeeded.
"""

from __future__ import annotations

from typing import Any

from ._fileio import FileToolError, PlannedChange, SnapshotSource, file_not_found, normalize_newlines
from .base import ToolContext
from .edit import FILE_EXISTS_MESSAGE, NO_CHANGES_MESSAGE, apply_edit
from .file_change import FileChangeTool
from .file_state import check_writable

SUBSTRING_MESSAGE = "Cannot edit file: old_string is a substring of a new_string from a previous edit."
UNCHANGED_MESSAGE = "Original and edited file match exactly. Failed to apply edit."
NO_EDITS_MESSAGE = "No edits to make: edits must contain at least one edit."
SUMMARY_CHARS = 50

# The model's text, one line per paragraph or bullet, as Claude Code words it.
DESCRIPTION = """This is a tool for making multiple edits to a single file in one operation. It is built on top of the Edit tool and allows you to perform multiple find-and-replace operations efficiently. Prefer this tool over the Edit tool when you need to make multiple edits to the same file.

Before using this tool:

1. Use the Read tool to understand the file's contents and context
2. Verify the directory path is correct

To make multiple file edits, provide the following:
1. file_path: The absolute path to the file to modify (must be absolute, not relative)
2. edits: An array of edit operations to perform, where each edit contains:
   - old_string: The text to replace (must match the file contents exactly, including all whitespace and indentation)
   - new_string: The edited text to replace the old_string
   - replace_all: Replace all occurences of old_string. This parameter is optional and defaults to false.

IMPORTANT:
- All edits are applied in sequence, in the order they are provided
- Each edit operates on the result of the previous edit
- All edits must be valid for the operation to succeed - if any edit fails, none will be applied
- This tool is ideal when you need to make several changes to different parts of the same file

CRITICAL REQUIREMENTS:
1. All edits follow the same requirements as the single Edit tool
2. The edits are atomic - either all succeed or none are applied
3. Plan your edits carefully to avoid conflicts between sequential operations

WARNING:
- The tool will fail if edits.old_string doesn't match the file contents exactly (including whitespace)
- The tool will fail if edits.old_string and edits.new_string are the same
- Since edits are applied in sequence, ensure that earlier edits don't affect the text that later edits are trying to find

When making edits:
- Ensure all edits result in idiomatic, correct code
- Do not leave the code in a broken state
- Always use absolute file paths (starting with /)
- Only use emojis if the user explicitly requests it. Avoid adding emojis to files unless asked.
- Use replace_all for replacing and renaming strings across the file. This parameter is useful if you want to rename a variable for instance.

If you want to create a new file, use:
- A new file path, including dir name if needed
- First edit: empty old_string and the new file's contents as new_string
- Subsequent edits: normal edit operations on the created content"""  # noqa: E501


def edit_failed(number: int, total: int, message: str) -> FileToolError:
    return FileToolError(f"Edit {number} of {total} failed, so no edits were applied: {message}")


def _clip(text: str) -> str:
    return text[:SUMMARY_CHARS] + ("..." if len(text) > SUMMARY_CHARS else "")


class MultiEditTool(FileChangeTool):
    name = "MultiEdit"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
            "edits": {
                "type": "array",
                "minItems": 1,
                "description": "Array of edit operations to perform sequentially on the file",
                "items": {
                    "type": "object",
                    "properties": {
                        "old_string": {"type": "string", "description": "The text to replace"},
                        "new_string": {"type": "string", "description": "The text to replace it with"},
                        "replace_all": {
                            "type": "boolean",
                            "default": False,
                            "description": "Replace all occurences of old_string (default false).",
                        },
                    },
                    "required": ["old_string", "new_string"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["file_path", "edits"],
        "additionalProperties": False,
    }

    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: SnapshotSource | None = None) -> PlannedChange:
        edits = list(input["edits"])
        if not edits:
            raise FileToolError(NO_EDITS_MESSAGE)
        path = self.path_of(input, ctx)
        snapshot = self.snapshot(path, folder)
        creates = str(edits[0]["old_string"]) == ""
        if not snapshot.exists and not creates:
            raise FileToolError(file_not_found(path))
        if snapshot.exists and not (creates and not snapshot.text.strip()):
            problem = check_writable(ctx.state, path)
            if problem:
                raise FileToolError(problem)
        content = snapshot.text
        applied_new: list[str] = []
        for number, edit in enumerate(edits, 1):
            old, new = str(edit["old_string"]), str(edit["new_string"])
            try:
                if old == new:
                    raise FileToolError(NO_CHANGES_MESSAGE)
                probe = normalize_newlines(old).rstrip("\n")
                if probe and any(probe in earlier for earlier in applied_new):
                    raise FileToolError(SUBSTRING_MESSAGE)
                if old == "":
                    if content.strip():
                        raise FileToolError(FILE_EXISTS_MESSAGE)
                    # The new file's whole text: later edits are meant to work on it.
                    content = normalize_newlines(new)
                    continue
                content = apply_edit(content, old, new, bool(edit.get("replace_all", False))).text
            except FileToolError as exc:
                raise edit_failed(number, len(edits), str(exc)) from None
            applied_new.append(normalize_newlines(new))
        if snapshot.exists and content == snapshot.text:
            raise FileToolError(UNCHANGED_MESSAGE)
        return PlannedChange(snapshot, content)

    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        edits = input["edits"]
        lines = [
            f'{i}. Replaced "{_clip(str(e["old_string"]))}" with "{_clip(str(e["new_string"]))}"'
            for i, e in enumerate(edits, 1)
        ]
        plural = "" if len(edits) == 1 else "s"
        return f"Applied {len(edits)} edit{plural} to {change.path}:\n" + "\n".join(lines)
