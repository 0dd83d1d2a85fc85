"""MultiEdit: edits applied in order in memory; any failure writes nothing."""

from __future__ import annotations

import stat

from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.file_state import NOT_READ_MESSAGE, record_read
from agent_tui.tools.multiedit import MultiEditTool


async def run(input: dict, ctx: ToolContext) -> ToolResult:
    items = [item async for item in MultiEditTool().call(input, ctx)]
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def make(tmp_path, text: str, read: bool = True):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "f.py"
    path.write_text(text)
    if read:
        record_read(ctx.state, path, path.read_bytes(), partial=False)
    return ctx, path


def e(old: str, new: str, **extra) -> dict:
    return {"old_string": old, "new_string": new, **extra}


async def test_applies_edits_in_order(tmp_path):
    ctx, path = make(tmp_path, "alpha\nbeta\ngamma\n")
    edits = [e("alpha", "ALPHA"), e("gamma", "GAMMA"), e("ALPHA\nbeta", "ALPHA\nBETA")]
    result = await run({"file_path": str(path), "edits": edits}, ctx)
    assert not result.is_error, result.content
    assert path.read_text() == "ALPHA\nBETA\nGAMMA\n"
    assert result.content == (
        f"Applied 3 edits to {path}:\n"
        '1. Replaced "alpha" with "ALPHA"\n'
        '2. Replaced "gamma" with "GAMMA"\n'
        '3. Replaced "ALPHA\nbeta" with "ALPHA\nBETA"'
    )


async def test_failing_edit_writes_nothing_and_names_the_edit(tmp_path):
    ctx, path = make(tmp_path, "one\ntwo\n")
    edits = [e("one", "1"), e("missing", "x"), e("two", "2")]
    result = await run({"file_path": str(path), "edits": edits}, ctx)
    assert result.is_error
    assert result.content == (
        "Edit 2 of 3 failed, so no edits were applied: String to replace not found in file.\nString: missing"
    )
    assert path.read_text() == "one\ntwo\n"


async def test_ambiguous_edit_writes_nothing(tmp_path):
    ctx, path = make(tmp_path, "x\nx\ny\n")
    result = await run({"file_path": str(path), "edits": [e("y", "Y"), e("x", "X")]}, ctx)
    assert result.is_error
    assert result.content.startswith("Edit 2 of 2 failed, so no edits were applied: Found 2 matches")
    assert path.read_text() == "x\nx\ny\n"


async def test_replace_all_in_one_edit(tmp_path):
    ctx, path = make(tmp_path, "x\nx\ny\n")
    result = await run({"file_path": str(path), "edits": [e("x", "X", replace_all=True)]}, ctx)
    assert result.content == f'Applied 1 edit to {path}:\n1. Replaced "x" with "X"'
    assert path.read_text() == "X\nX\ny\n"


async def test_old_string_inside_an_earlier_new_string_is_refused(tmp_path):
    ctx, path = make(tmp_path, "a = 1\n")
    result = await run({"file_path": str(path), "edits": [e("a = 1", "a = 1\nb = 2"), e("b = 2", "b = 3")]}, ctx)
    assert result.content == (
        "Edit 2 of 2 failed, so no edits were applied: "
        "Cannot edit file: old_string is a substring of a new_string from a previous edit."
    )
    assert path.read_text() == "a = 1\n"


async def test_identical_strings_in_an_edit_are_refused(tmp_path):
    ctx, path = make(tmp_path, "a\n")
    result = await run({"file_path": str(path), "edits": [e("a", "a")]}, ctx)
    assert result.content == (
        "Edit 1 of 1 failed, so no edits were applied: "
        "No changes to make: old_string and new_string are exactly the same."
    )


async def test_edits_that_cancel_out_are_refused(tmp_path):
    ctx, path = make(tmp_path, "ab\n")
    result = await run({"file_path": str(path), "edits": [e("a", "b"), e("bb", "ab")]}, ctx)
    assert result.is_error
    assert result.content == "Original and edited file match exactly. Failed to apply edit."


async def test_refuses_file_not_read(tmp_path):
    ctx, path = make(tmp_path, "a\n", read=False)
    result = await run({"file_path": str(path), "edits": [e("a", "b")]}, ctx)
    assert result.content == NOT_READ_MESSAGE
    assert path.read_text() == "a\n"


async def test_missing_file_error(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    result = await run({"file_path": str(tmp_path / "nope.py"), "edits": [e("a", "b")]}, ctx)
    assert result.content == "File does not exist."


async def test_first_edit_with_empty_old_string_creates_file(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "new.py"
    edits = [e("", "def f():\n    return 1\n"), e("return 1", "return 2")]
    result = await run({"file_path": str(path), "edits": edits}, ctx)
    assert not result.is_error, result.content
    assert path.read_text() == "def f():\n    return 2\n"
    assert result.data["created"] is True


async def test_empty_edit_list_is_refused(tmp_path):
    ctx, path = make(tmp_path, "a\n")
    result = await run({"file_path": str(path), "edits": []}, ctx)
    assert result.is_error
    assert path.read_text() == "a\n"


async def test_crlf_and_mode_are_kept(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    path = tmp_path / "w.bat"
    path.write_bytes(b"echo a\r\necho b\r\n")
    path.chmod(0o750)
    record_read(ctx.state, path, path.read_bytes(), partial=False)
    await run({"file_path": str(path), "edits": [e("echo a", "echo A"), e("echo b\n", "echo B\necho C\n")]}, ctx)
    assert path.read_bytes() == b"echo A\r\necho B\r\necho C\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.bat"]


async def test_permission_preview_matches_diff_after_call(tmp_path):
    ctx, path = make(tmp_path, "one\ntwo\nthree\n")
    input = {"file_path": str(path), "edits": [e("one", "1"), e("three", "3")]}
    preview = await MultiEditTool().permission_preview(input, ctx)
    assert path.read_text() == "one\ntwo\nthree\n"
    result = await run(input, ctx)
    assert preview == result.data["diff"]
    assert (result.data["added"], result.data["removed"]) == (2, 2)


async def test_permission_preview_is_none_when_an_edit_would_fail(tmp_path):
    ctx, path = make(tmp_path, "one\n")
    input = {"file_path": str(path), "edits": [e("one", "1"), e("nope", "x")]}
    assert await MultiEditTool().permission_preview(input, ctx) is None


def test_flags_and_summary(tmp_path):
    tool = MultiEditTool(cwd=tmp_path)
    input = {"file_path": str(tmp_path / "f.py"), "edits": [e("a", "b")]}
    assert tool.is_read_only(input) is False
    assert tool.is_concurrency_safe(input) is False
    assert tool.summarize(input) == "f.py"
