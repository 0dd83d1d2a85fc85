"""Edit: exact replacements, Claude Code's error texts, read-first rule, line endings and mode kept."""

from __future__ import annotations

import os
import stat

from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.edit import EditTool
from agent_tui.tools.file_state import MODIFIED_MESSAGE, NOT_READ_MESSAGE, record_read


async def run(input: dict, ctx: ToolContext) -> ToolResult:
    items = [item async for item in EditTool().call(input, ctx)]
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def make(tmp_path, text: str, name: str = "f.py", read: bool = True):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / name
    path.write_text(text)
    if read:
        record_read(ctx.state, path, path.read_bytes(), partial=False)
    return ctx, path


def edit(path, old: str, new: str, **extra) -> dict:
    return {"file_path": str(path), "old_string": old, "new_string": new, **extra}


async def test_replaces_unique_string_and_shows_snippet(tmp_path):
    ctx, path = make(tmp_path, "a = 1\nb = 2\nc = 3\n")
    result = await run(edit(path, "b = 2", "b = 20"), ctx)
    assert not result.is_error
    assert path.read_text() == "a = 1\nb = 20\nc = 3\n"
    assert result.content == (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of "
        "the edited file:\n1\ta = 1\n2\tb = 20\n3\tc = 3\n4\t"
    )


async def test_snippet_is_limited_to_lines_around_the_edit(tmp_path):
    ctx, path = make(tmp_path, "".join(f"line {i}\n" for i in range(1, 21)))
    result = await run(edit(path, "line 10\n", "ten\n"), ctx)
    numbered = result.content.split("\n", 1)[1].splitlines()
    assert numbered[0] == "6\tline 6"
    assert "10\tten" in numbered
    assert numbered[-1] == "14\tline 14"


async def test_missing_file_error(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    result = await run(edit(tmp_path / "nope.py", "a", "b"), ctx)
    assert result.is_error
    assert result.content == "File does not exist."


async def test_missing_file_error_suggests_same_name_other_extension(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    (tmp_path / "mod.ts").write_text("x")
    result = await run(edit(tmp_path / "mod.js", "a", "b"), ctx)
    assert result.content == f"File does not exist. Did you mean {tmp_path / 'mod.ts'}?"


async def test_string_not_found_error(tmp_path):
    ctx, path = make(tmp_path, "a = 1\n")
    result = await run(edit(path, "zzz", "y"), ctx)
    assert result.is_error
    assert result.content == "String to replace not found in file.\nString: zzz"


async def test_multiple_matches_without_replace_all_error(tmp_path):
    ctx, path = make(tmp_path, "x\nx\nx\n")
    result = await run(edit(path, "x", "y"), ctx)
    assert result.is_error
    assert result.content == (
        "Found 3 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
        "context to uniquely identify the instance.\nString: x"
    )
    assert path.read_text() == "x\nx\nx\n"


async def test_replace_all_replaces_every_occurrence(tmp_path):
    ctx, path = make(tmp_path, "foo(); foo();\nfoo\n")
    result = await run(edit(path, "foo", "bar", replace_all=True), ctx)
    assert not result.is_error
    assert path.read_text() == "bar(); bar();\nbar\n"
    assert result.content == (
        f"The file {path} has been updated. All occurrences of 'foo' were successfully replaced with 'bar'."
    )


async def test_identical_strings_error(tmp_path):
    ctx, path = make(tmp_path, "a\n")
    result = await run(edit(path, "a", "a"), ctx)
    assert result.is_error
    assert result.content == "No changes to make: old_string and new_string are exactly the same."


async def test_empty_old_string_on_existing_nonempty_file_error(tmp_path):
    ctx, path = make(tmp_path, "content\n")
    result = await run(edit(path, "", "new"), ctx)
    assert result.is_error
    assert result.content == "Cannot create new file - file already exists."
    assert path.read_text() == "content\n"


async def test_empty_old_string_creates_missing_file(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "pkg" / "new.py"
    result = await run(edit(path, "", "print('hi')\n"), ctx)
    assert not result.is_error
    assert result.content == f"File created successfully at: {path}"
    assert path.read_text() == "print('hi')\n"
    assert result.data["created"] is True


async def test_refuses_file_not_read(tmp_path):
    ctx, path = make(tmp_path, "a\n", read=False)
    result = await run(edit(path, "a", "b"), ctx)
    assert result.is_error
    assert result.content == NOT_READ_MESSAGE
    assert path.read_text() == "a\n"


async def test_refuses_file_changed_since_read(tmp_path):
    ctx, path = make(tmp_path, "a\n")
    path.write_text("a\nlinted\n")
    os.utime(path, (1_000_000, 1_000_000))
    result = await run(edit(path, "a", "b"), ctx)
    assert result.is_error
    assert result.content == MODIFIED_MESSAGE
    assert path.read_text() == "a\nlinted\n"


async def test_crlf_file_edited_with_lf_strings_stays_crlf(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    record_read(ctx.state, path, path.read_bytes(), partial=False)
    result = await run(edit(path, "one\ntwo", "1\n2\n2.5"), ctx)
    assert not result.is_error
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"


async def test_crlf_strings_match_crlf_file(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    record_read(ctx.state, path, path.read_bytes(), partial=False)
    await run(edit(path, "one\r\ntwo", "uno\r\ndos"), ctx)
    assert path.read_bytes() == b"uno\r\ndos\r\n"


async def test_file_mode_is_kept_and_no_temp_files_left(tmp_path):
    ctx, path = make(tmp_path, "#!/bin/sh\necho a\n", name="run.sh")
    path.chmod(0o755)
    await run(edit(path, "echo a", "echo b"), ctx)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


async def test_consecutive_edits_need_no_reread(tmp_path):
    ctx, path = make(tmp_path, "a\nb\n")
    first = await run(edit(path, "a", "A"), ctx)
    second = await run(edit(path, "b", "B"), ctx)
    assert not first.is_error and not second.is_error
    assert path.read_text() == "A\nB\n"


async def test_deleting_a_whole_line_removes_its_newline(tmp_path):
    ctx, path = make(tmp_path, "keep\ndrop me\nkeep too\n")
    await run(edit(path, "drop me", ""), ctx)
    assert path.read_text() == "keep\nkeep too\n"


async def test_straight_quotes_match_curly_quotes_and_keep_their_style(tmp_path):
    ctx, path = make(tmp_path, "say \u201chello\u201d now\n", name="t.md")
    result = await run(edit(path, 'say "hello"', 'say "goodbye"'), ctx)
    assert not result.is_error
    assert path.read_text() == "say \u201cgoodbye\u201d now\n"


async def test_diff_in_data(tmp_path):
    ctx, path = make(tmp_path, "x = 1\n", name="m.py")
    result = await run(edit(path, "x = 1", "x = 2"), ctx)
    assert result.data == {
        "path": str(path),
        "diff": "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "added": 1,
        "removed": 1,
        "created": False,
    }


async def test_permission_preview_matches_diff_after_call(tmp_path):
    ctx, path = make(tmp_path, "a\nb\nc\n")
    input = edit(path, "b", "B")
    preview = await EditTool().permission_preview(input, ctx)
    assert path.read_text() == "a\nb\nc\n"
    result = await run(input, ctx)
    assert preview == result.data["diff"]
    assert preview.startswith("--- a/f.py\n+++ b/f.py\n")


async def test_validate_reports_errors_before_permission(tmp_path):
    ctx, path = make(tmp_path, "a\n")
    assert await EditTool().validate(edit(path, "zzz", "y"), ctx) == "String to replace not found in file.\nString: zzz"
    assert await EditTool().validate(edit(path, "a", "b"), ctx) is None


def test_flags_schema_and_summary(tmp_path):
    tool = EditTool(cwd=tmp_path)
    input = edit(tmp_path / "f.py", "a", "b")
    assert tool.is_read_only(input) is False
    assert tool.is_concurrency_safe(input) is False
    assert tool.summarize(input) == "f.py"
    assert tool.input_schema["properties"]["replace_all"]["default"] is False
    assert tool.input_schema["required"] == ["file_path", "old_string", "new_string"]
