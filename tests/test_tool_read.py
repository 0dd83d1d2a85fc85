"""Read: cat -n numbered windows of text files, and specific errors otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from agent_tui.tools.base import Progress, ToolContext, ToolResult, validate_schema
from agent_tui.tools.read import ReadTool
from tests.tool_call import call_tool


async def run(input: dict, ctx: ToolContext) -> ToolResult:
    items: list[Progress | ToolResult] = await call_tool(ReadTool(), input, ctx)
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def write_lines(path: Path, count: int) -> Path:
    path.write_text("".join(f"line {n}\n" for n in range(1, count + 1)))
    return path


async def test_lines_are_numbered_like_cat_n(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("alpha\nbeta\n")
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    assert result.content == "1\talpha\n2\tbeta"
    assert not result.is_error


async def test_reads_2000_lines_by_default_and_says_how_to_read_more(tmp_path):
    path = write_lines(tmp_path / "big.txt", 2500)
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    lines = result.content.split("\n\n(")[0].splitlines()
    assert len(lines) == 2000
    assert lines[-1] == "2000\tline 2000"
    assert "Showing lines 1-2000 of 2500" in result.content


async def test_offset_and_limit_select_a_window_keeping_file_line_numbers(tmp_path):
    path = write_lines(tmp_path / "a.txt", 50)
    result = await run({"file_path": str(path), "offset": 10, "limit": 3}, ToolContext(cwd=tmp_path))
    assert result.content.startswith("10\tline 10\n11\tline 11\n12\tline 12\n")
    assert "Showing lines 10-12 of 50" in result.content


async def test_lines_longer_than_2000_characters_are_truncated(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("x" * 5000 + "\nshort\n")
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    first, second = result.content.splitlines()[:2]
    assert first == "1\t" + "x" * 2000
    assert second == "2\tshort"
    assert "1 line(s) longer than 2000 characters were truncated" in result.content


async def test_missing_file_is_a_specific_error(tmp_path):
    result = await run({"file_path": str(tmp_path / "nope.txt")}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert result.content.startswith("File does not exist.")


async def test_directory_is_refused_with_a_hint(tmp_path):
    result = await run({"file_path": str(tmp_path)}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert "is a directory" in result.content


async def test_empty_file_gives_a_system_reminder(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    assert not result.is_error
    assert result.content == (
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    )


async def test_offset_past_the_end_says_how_long_the_file_is(tmp_path):
    path = write_lines(tmp_path / "a.txt", 3)
    result = await run({"file_path": str(path), "offset": 10}, ToolContext(cwd=tmp_path))
    assert "shorter than the provided offset (10)" in result.content
    assert "The file has 3 lines" in result.content


async def test_binary_file_is_reported_as_binary(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert "binary file" in result.content


async def test_relative_path_is_resolved_against_cwd(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("hi\n")
    result = await run({"file_path": "sub/a.txt"}, ToolContext(cwd=tmp_path))
    assert result.content == "1\thi"


async def test_full_read_is_recorded_with_mtime_and_not_partial(tmp_path):
    path = write_lines(tmp_path / "a.txt", 5)
    os.utime(path, (1_000_000, 1_000_000))
    ctx = ToolContext(cwd=tmp_path)
    await run({"file_path": str(path)}, ctx)
    record = ctx.state["read_files"][str(path)]
    assert (record["mtime"], record["partial"]) == (1_000_000, False)


async def test_read_state_key_is_the_normalised_absolute_path(tmp_path):
    write_lines(tmp_path / "a.txt", 1)
    ctx = ToolContext(cwd=tmp_path / "sub")
    (tmp_path / "sub").mkdir()
    await run({"file_path": "../a.txt"}, ctx)
    assert list(ctx.state["read_files"]) == [str(tmp_path / "a.txt")]


async def test_windowed_read_is_recorded_as_partial(tmp_path):
    path = write_lines(tmp_path / "a.txt", 5)
    ctx = ToolContext(cwd=tmp_path)
    await run({"file_path": str(path), "limit": 2}, ctx)
    assert ctx.state["read_files"][str(path)]["partial"] is True


async def test_data_for_the_ui_has_counts_and_a_short_excerpt(tmp_path):
    path = write_lines(tmp_path / "a.txt", 30)
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    assert result.data["path"] == str(path)
    assert result.data["lines_read"] == 30
    assert result.data["total_lines"] == 30
    assert result.data["excerpt"].splitlines() == [f"line {n}" for n in range(1, 21)]


def test_read_is_read_only_and_concurrency_safe():
    tool = ReadTool()
    assert tool.is_read_only({"file_path": "/x"})
    assert tool.is_concurrency_safe({"file_path": "/x"})


def test_schema_requires_file_path_and_rejects_unknown_keys():
    schema = ReadTool().input_schema
    assert "file_path" in validate_schema(schema, {})
    assert "unexpected parameter `lines`" in validate_schema(schema, {"file_path": "/a", "lines": 3})
    assert validate_schema(schema, {"file_path": "/a", "offset": 2, "limit": 5}) is None
