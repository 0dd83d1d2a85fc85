"""Edit: exact string replacement in a file the model has read (Claude Code's `Edit`).

The matching rules here are shared with MultiEdit: strings are matched with
line endings folded to LF (the file keeps its own endings when written), and
when a string is not found as typed, curly quotes in the file are matched by
straight ones (the replacement then takes the file's curly style).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._fileio import (
    LF,
    FileToolError,
    PlannedChange,
    SnapshotSource,
    created_message,
    file_not_found,
    normalize_newlines,
    number_lines,
    numbered_file,
    updated_message,
)
from .base import ToolContext
from .file_change import FileChangeTool
from .file_state import check_writable

NO_CHANGES_MESSAGE = "No changes to make: old_string and new_string are exactly the same."
FILE_EXISTS_MESSAGE = "Cannot create new file - file already exists."
SNIPPET_CONTEXT_LINES = 4

LEFT_SINGLE, RIGHT_SINGLE = "\u2018", "\u2019"
LEFT_DOUBLE, RIGHT_DOUBLE = "\u201c", "\u201d"
_STRAIGHTEN = str.maketrans({LEFT_SINGLE: "'", RIGHT_SINGLE: "'", LEFT_DOUBLE: '"', RIGHT_DOUBLE: '"'})
_OPENING_CONTEXT = set(" \t\n\r([{\u2014\u2013")

# The model's text, one line per paragraph or bullet, as Claude Code words it.
DESCRIPTION = """Performs exact string replacements in files.

Usage:
- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. The line number prefix format is: line number + tab. Everything after that tab is the actual file content to match. Never include any part of the line number prefix in the old_string or new_string.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- Only use emojis if the user explicitly requests it. Avoid adding emojis to files unless asked.
- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.
- Use `replace_all` for replacing and renaming strings across the file. This parameter is useful if you want to rename a variable for instance."""  # noqa: E501


# Bytes of the file that are not UTF-8 (surrogateescape): Read shows them as U+FFFD.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
UNDECODABLE_MESSAGE = (
    "String to replace not found in file. The file contains bytes that are not valid UTF-8, which Read "
    "shows as \ufffd; an edit keeps them as they are but old_string cannot match them. Choose an "
    "old_string and new_string that leave those characters out."
)


def not_found_message(old_string: str) -> str:
    return f"String to replace not found in file.\nString: {old_string}"


def too_many_matches_message(count: int, old_string: str) -> str:
    return (
        f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
        f"context to uniquely identify the instance.\nString: {old_string}"
    )


def find_actual_string(content: str, search: str) -> str | None:
    """`search` as it appears in `content`: exactly, or with the file's curly quotes."""
    if search in content:
        return search
    index = content.translate(_STRAIGHTEN).find(search.translate(_STRAIGHTEN))
    if index < 0:
        return None
    return content[index : index + len(search)]


def preserve_quote_style(old: str, actual_old: str, new: str) -> str:
    """When the match needed curly quotes, give the replacement the same curly style."""
    if old == actual_old:
        return new
    double = LEFT_DOUBLE in actual_old or RIGHT_DOUBLE in actual_old
    single = LEFT_SINGLE in actual_old or RIGHT_SINGLE in actual_old
    if not double and not single:
        return new
    chars = list(new)
    for i, ch in enumerate(chars):
        opening = i == 0 or chars[i - 1] in _OPENING_CONTEXT
        if ch == '"' and double:
            chars[i] = LEFT_DOUBLE if opening else RIGHT_DOUBLE
        elif ch == "'" and single:
            between_letters = 0 < i < len(chars) - 1 and chars[i - 1].isalpha() and chars[i + 1].isalpha()
            chars[i] = RIGHT_SINGLE if between_letters or not opening else LEFT_SINGLE
    return "".join(chars)


def replace_text(content: str, old: str, new: str, replace_all: bool) -> str:
    """Replace `old` (first or every occurrence); deleting a whole line takes its newline too."""
    count = -1 if replace_all else 1
    if new == "" and not old.endswith(LF) and old + LF in content:
        content = content.replace(old + LF, new, count)
        return content.replace(old, new) if replace_all else content
    return content.replace(old, new, count)


@dataclass(slots=True)
class AppliedEdit:
    text: str  # the whole file after the edit
    old: str  # what was matched in the file
    new: str  # what replaced it


def apply_edit(content: str, old_string: str, new_string: str, replace_all: bool) -> AppliedEdit:
    """Apply one non-empty `old_string` edit to LF text; FileToolError with Claude Code's text."""
    if old_string == new_string:
        raise FileToolError(NO_CHANGES_MESSAGE)
    old = normalize_newlines(old_string)
    new = normalize_newlines(new_string)
    actual = find_actual_string(content, old)
    if actual is None and "\ufffd" in old and _UNDECODABLE.search(content):
        raise FileToolError(UNDECODABLE_MESSAGE)
    if actual is None:
        raise FileToolError(not_found_message(old_string))
    count = content.count(actual)
    if count > 1 and not replace_all:
        raise FileToolError(too_many_matches_message(count, old_string))
    new = preserve_quote_style(old, actual, new)
    return AppliedEdit(replace_text(content, actual, new, replace_all), actual, new)


def edit_snippet(original: str, applied: AppliedEdit) -> str:
    """The edited region with a few lines around it, numbered like `cat -n`."""
    line = original.split(applied.old, 1)[0].count(LF)
    start = max(0, line - SNIPPET_CONTEXT_LINES)
    new_lines = applied.new.count(LF) + (0 if applied.new.endswith(LF) else 1)
    end = line + new_lines + SNIPPET_CONTEXT_LINES
    return number_lines(LF.join(applied.text.split(LF)[start:end]), start + 1)


class EditTool(FileChangeTool):
    name = "Edit"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
            "old_string": {"type": "string", "description": "The text to replace"},
            "new_string": {
                "type": "string",
                "description": "The text to replace it with (must be different from old_string)",
            },
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace all occurences of old_string (default false)",
            },
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    def plan(self, input: dict[str, Any], ctx: ToolContext, folder: SnapshotSource | None = None) -> PlannedChange:
        old, new = str(input["old_string"]), str(input["new_string"])
        if old == new:
            raise FileToolError(NO_CHANGES_MESSAGE)
        path = self.path_of(input, ctx)
        snapshot = self.snapshot(path, folder)
        if old == "":
            # An empty old_string creates the file (or fills an empty one).
            if snapshot.exists and snapshot.text.strip():
                raise FileToolError(FILE_EXISTS_MESSAGE)
            return PlannedChange(snapshot, new)
        if not snapshot.exists:
            raise FileToolError(file_not_found(path))
        problem = check_writable(ctx.state, path)
        if problem:
            raise FileToolError(problem)
        applied = apply_edit(snapshot.text, old, new, bool(input.get("replace_all", False)))
        return PlannedChange(snapshot, applied.text)

    def result_text(self, input: dict[str, Any], change: PlannedChange) -> str:
        old, new = str(input["old_string"]), str(input["new_string"])
        if change.created:
            return created_message(change.path)
        if old == "":
            return updated_message(change.path, numbered_file(normalize_newlines(change.new_text)))
        if input.get("replace_all"):
            return (
                f"The file {change.path} has been updated. All occurrences of '{old}' were "
                f"successfully replaced with '{new}'."
            )
        applied = apply_edit(change.snapshot.text, old, new, False)
        return updated_message(change.path, edit_snippet(change.snapshot.text, applied))
