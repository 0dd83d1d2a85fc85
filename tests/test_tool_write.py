"""Write: new files, the read-first rule, atomic writes that keep mode and line endings."""

from __future__ import annotations

import os
import stat

from agent_tui.tools.base import ToolContext, ToolResult, tool_to_api
from agent_tui.tools.file_state import MODIFIED_MESSAGE, NOT_READ_MESSAGE, record_read
from agent_tui.tools.write import WriteTool


async def run(tool, input: dict, ctx: ToolContext) -> ToolResult:
    items = [item async for item in tool.call(input, ctx)]
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def read(ctx: ToolContext, path) -> None:
    record_read(ctx.state, path, path.read_bytes(), partial=False)


async def test_new_file_needs_no_prior_read(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "new.txt"
    result = await run(WriteTool(), {"file_path": str(target), "content": "hello\n"}, ctx)
    assert not result.is_error
    assert result.content == f"File created successfully at: {target}"
    assert target.read_text() == "hello\n"
    assert result.data["created"] is True
    assert result.data["path"] == str(target)


async def test_a_new_files_diff_is_against_dev_null(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    result = await run(WriteTool(), {"file_path": str(tmp_path / "new.txt"), "content": "a\nb\n"}, ctx)
    assert result.data["diff"] == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"


async def test_relative_path_is_resolved_against_cwd(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    await run(WriteTool(), {"file_path": "rel.txt", "content": "x"}, ctx)
    assert (tmp_path / "rel.txt").read_text() == "x"


async def test_creates_parent_directories(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a" / "b" / "c.txt"
    result = await run(WriteTool(), {"file_path": str(target), "content": "deep"}, ctx)
    assert not result.is_error
    assert target.read_text() == "deep"


async def test_refuses_existing_file_not_read(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("original\n")
    result = await run(WriteTool(), {"file_path": str(target), "content": "new\n"}, ctx)
    assert result.is_error
    assert result.content == "File has not been read yet. Read it first before writing to it."
    assert result.content == NOT_READ_MESSAGE
    assert target.read_text() == "original\n"


async def test_refuses_file_changed_since_read(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("original\n")
    read(ctx, target)
    target.write_text("edited by the user\n")
    os.utime(target, (1_000_000, 1_000_000))
    result = await run(WriteTool(), {"file_path": str(target), "content": "new\n"}, ctx)
    assert result.is_error
    assert result.content == (
        "File has been modified since read, either by the user or by a linter. "
        "Read it again before attempting to write it."
    )
    assert result.content == MODIFIED_MESSAGE
    assert target.read_text() == "edited by the user\n"


async def test_validate_reports_the_refusal_before_permission(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("original\n")
    assert await WriteTool().validate({"file_path": str(target), "content": "x"}, ctx) == NOT_READ_MESSAGE
    read(ctx, target)
    assert await WriteTool().validate({"file_path": str(target), "content": "x"}, ctx) is None


async def test_overwrite_of_read_file_reports_numbered_content(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    read(ctx, target)
    result = await run(WriteTool(), {"file_path": str(target), "content": "one\ntwo"}, ctx)
    assert not result.is_error
    assert result.content == (
        f"The file {target} has been updated. Here's the result of running `cat -n` on a snippet "
        "of the edited file:\n1\tone\n2\ttwo"
    )
    assert target.read_text() == "one\ntwo"
    assert result.data["created"] is False


async def test_atomic_write_leaves_no_temp_files(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    read(ctx, target)
    await run(WriteTool(), {"file_path": str(target), "content": "new\n"}, ctx)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


async def test_existing_file_mode_is_kept(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o755)
    read(ctx, target)
    await run(WriteTool(), {"file_path": str(target), "content": "echo new\n"}, ctx)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert target.read_text() == "echo new\n"


async def test_new_file_mode_follows_umask(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    old = os.umask(0o027)
    try:
        await run(WriteTool(), {"file_path": str(tmp_path / "n.txt"), "content": "x"}, ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o640


async def test_crlf_line_endings_are_kept(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "win.txt"
    target.write_bytes(b"a\r\nb\r\n")
    read(ctx, target)
    await run(WriteTool(), {"file_path": str(target), "content": "x\ny\nz\n"}, ctx)
    assert target.read_bytes() == b"x\r\ny\r\nz\r\n"


async def test_utf8_bom_is_kept(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "bom.txt"
    target.write_bytes(b"\xef\xbb\xbfold\n")
    read(ctx, target)
    await run(WriteTool(), {"file_path": str(target), "content": "new\n"}, ctx)
    assert target.read_bytes() == b"\xef\xbb\xbfnew\n"


async def test_write_through_symlink_keeps_the_link(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    read(ctx, link)
    result = await run(WriteTool(), {"file_path": str(link), "content": "new\n"}, ctx)
    assert not result.is_error
    assert link.is_symlink()
    assert real.read_text() == "new\n"


async def test_consecutive_writes_need_no_reread(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    await run(WriteTool(), {"file_path": str(target), "content": "one\n"}, ctx)
    result = await run(WriteTool(), {"file_path": str(target), "content": "two\n"}, ctx)
    assert not result.is_error
    assert target.read_text() == "two\n"


async def test_data_has_unified_diff_and_counts(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("keep\nold\n")
    read(ctx, target)
    result = await run(WriteTool(), {"file_path": str(target), "content": "keep\nnew\nmore\n"}, ctx)
    assert result.data["diff"] == ("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n keep\n-old\n+new\n+more\n")
    assert (result.data["added"], result.data["removed"]) == (2, 1)


async def test_permission_preview_matches_diff_after_call_and_writes_nothing(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("one\ntwo\n")
    read(ctx, target)
    input = {"file_path": str(target), "content": "one\n2\n"}
    preview = await WriteTool().permission_preview(input, ctx)
    assert target.read_text() == "one\ntwo\n"
    result = await run(WriteTool(), input, ctx)
    assert preview == result.data["diff"]
    assert "-two\n+2\n" in preview


async def test_permission_preview_is_none_when_the_write_would_fail(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    target = tmp_path / "a.txt"
    target.write_text("unread\n")
    assert await WriteTool().permission_preview({"file_path": str(target), "content": "x"}, ctx) is None


async def test_writing_a_directory_is_an_error(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    result = await run(WriteTool(), {"file_path": str(tmp_path), "content": "x"}, ctx)
    assert result.is_error
    assert result.content == f"{tmp_path} is a directory, not a file."


def test_not_read_only_not_concurrency_safe_and_summary_is_relative(tmp_path):
    tool = WriteTool(cwd=tmp_path)
    input = {"file_path": str(tmp_path / "src" / "a.py"), "content": ""}
    assert tool.is_read_only(input) is False
    assert tool.is_concurrency_safe(input) is False
    assert tool.summarize(input) == os.path.join("src", "a.py")
    assert tool.summarize({"file_path": "/elsewhere/b.py", "content": ""}) == "/elsewhere/b.py"
    assert tool_to_api(tool)["name"] == "Write"
    assert tool.input_schema["required"] == ["file_path", "content"]
