"""Grep: ripgrep with Claude Code's modes and output formats."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.grep import GrepTool, find_rg
from tests.tool_call import call_tool


async def run(input: dict, ctx: ToolContext) -> ToolResult:
    items = await call_tool(GrepTool(), input, ctx)
    assert isinstance(items[-1], ToolResult)
    return items[-1]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\n\ndef main():\n    print('Hello')\n")
    (tmp_path / "src" / "util.py").write_text("def helper():\n    return 'hello world'\n")
    (tmp_path / "notes.md").write_text("say hello\nand hello again\n")
    os.utime(tmp_path / "notes.md", (1_000, 1_000))
    os.utime(tmp_path / "src" / "util.py", (3_000, 3_000))
    os.utime(tmp_path / "src" / "app.py", (2_000, 2_000))
    return tmp_path


def rg_children() -> list[int]:
    """Live rg processes started by this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
            if comm == "rg" and int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_rg_is_found_as_an_executable():
    rg = find_rg()
    assert rg is not None
    assert os.access(rg, os.X_OK)


async def test_default_mode_lists_files_newest_first(tree):
    result = await run({"pattern": "hello"}, ToolContext(cwd=tree))
    assert result.content.splitlines() == [
        "Found 2 files",
        "src/util.py",
        "notes.md",
    ]
    assert result.data == {"matches": 2, "files": [str(tree / "src" / "util.py"), str(tree / "notes.md")]}


async def test_content_mode_prints_path_line_and_text(tree):
    result = await run({"pattern": "hello", "output_mode": "content", "path": "notes.md"}, ToolContext(cwd=tree))
    assert result.content.splitlines() == [
        "notes.md:1:say hello",
        "notes.md:2:and hello again",
    ]
    assert result.data["matches"] == 2


async def test_content_mode_without_line_numbers(tree):
    result = await run(
        {"pattern": "again", "output_mode": "content", "-n": False, "path": "notes.md"}, ToolContext(cwd=tree)
    )
    assert result.content == "notes.md:and hello again"


async def test_count_mode_gives_per_file_counts_and_a_total(tree):
    result = await run({"pattern": "hello", "output_mode": "count", "glob": "*.md"}, ToolContext(cwd=tree))
    assert result.content == "notes.md:2\n\nFound 2 total occurrences across 1 file."


async def test_case_insensitive_flag(tree):
    sensitive = await run({"pattern": "Hello"}, ToolContext(cwd=tree))
    insensitive = await run({"pattern": "Hello", "-i": True}, ToolContext(cwd=tree))
    assert sensitive.data["files"] == [str(tree / "src" / "app.py")]
    assert len(insensitive.data["files"]) == 3


async def test_context_lines_use_dashes(tree):
    result = await run(
        {"pattern": "print", "output_mode": "content", "-B": 1, "path": "src/app.py"}, ToolContext(cwd=tree)
    )
    assert result.content.splitlines() == ["src/app.py-3-def main():", "src/app.py:4:    print('Hello')"]


async def test_type_filter_restricts_files(tree):
    result = await run({"pattern": "hello", "type": "md"}, ToolContext(cwd=tree))
    assert result.data["files"] == [str(tree / "notes.md")]


async def test_head_limit_keeps_the_first_entries(tree):
    result = await run({"pattern": "hello", "head_limit": 1}, ToolContext(cwd=tree))
    assert result.content.splitlines() == ["Found 2 files (showing the first 1)", "src/util.py"]


async def test_multiline_matches_across_lines(tree):
    result = await run(
        {"pattern": r"main\(\):\n\s+print", "multiline": True, "output_mode": "content"}, ToolContext(cwd=tree)
    )
    assert result.content.splitlines() == ["src/app.py:3:def main():", "src/app.py:4:    print('Hello')"]


async def test_no_match_says_no_files_found(tree):
    result = await run({"pattern": "zebra"}, ToolContext(cwd=tree))
    assert result.content == "No files found"
    assert not result.is_error


async def test_invalid_regex_is_an_error_with_rg_message(tree):
    result = await run({"pattern": "(unclosed"}, ToolContext(cwd=tree))
    assert result.is_error
    assert "regex" in result.content


async def test_missing_path_is_an_error(tree):
    result = await run({"pattern": "x", "path": "nope"}, ToolContext(cwd=tree))
    assert result.is_error
    assert result.content == "Path does not exist: nope"


async def test_pattern_starting_with_dash_is_a_pattern_not_a_flag(tmp_path):
    (tmp_path / "a.txt").write_text("use --force here\n")
    result = await run({"pattern": "--force"}, ToolContext(cwd=tmp_path))
    assert result.data["files"] == [str(tmp_path / "a.txt")]


async def test_abort_stops_a_blocked_search_and_kills_rg(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # rg blocks reading a fifo nobody writes to
    ctx = ToolContext(cwd=tmp_path)
    task = asyncio.create_task(run({"pattern": "x", "path": str(fifo)}, ctx))
    await asyncio.sleep(0.3)
    assert rg_children()
    ctx.abort.set()
    result = await asyncio.wait_for(task, 5)
    assert result.is_error and result.content == "Interrupted by user"
    assert rg_children() == []


async def test_cancellation_kills_rg(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    task = asyncio.create_task(run({"pattern": "x", "path": str(fifo)}, ToolContext(cwd=tmp_path)))
    await asyncio.sleep(0.3)
    assert rg_children()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rg_children() == []


def test_grep_is_read_only_and_concurrency_safe():
    assert GrepTool().is_read_only({"pattern": "x"})
    assert GrepTool().is_concurrency_safe({"pattern": "x"})
