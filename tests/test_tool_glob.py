"""Glob: paths matching a pattern (relative to the working directory inside it), newest first, capped at 100."""

from __future__ import annotations

import os
from pathlib import Path

from agent_tui.tools import glob as glob_module
from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.glob import TRUNCATED_NOTE, GlobTool
from tests.tool_call import call_tool


async def run(input: dict, ctx: ToolContext) -> ToolResult:
    items = await call_tool(GlobTool(), input, ctx)
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def touch(path: Path, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    os.utime(path, (mtime, mtime))
    return path


async def test_results_are_paths_relative_to_the_working_directory_newest_first(tmp_path):
    touch(tmp_path / "old.py", 1_000)
    touch(tmp_path / "src" / "new.py", 3_000)
    touch(tmp_path / "src" / "mid.py", 2_000)
    result = await run({"pattern": "**/*.py"}, ToolContext(cwd=tmp_path))
    assert result.content.splitlines() == ["src/new.py", "src/mid.py", "old.py"]


async def test_pattern_without_double_star_matches_only_the_top_level(tmp_path):
    touch(tmp_path / "top.py", 1_000)
    touch(tmp_path / "sub" / "deep.py", 2_000)
    result = await run({"pattern": "*.py"}, ToolContext(cwd=tmp_path))
    assert result.content.splitlines() == ["top.py"]


async def test_path_sets_the_search_root(tmp_path):
    touch(tmp_path / "a" / "x.txt", 1_000)
    touch(tmp_path / "b" / "y.txt", 1_000)
    result = await run({"pattern": "*.txt", "path": str(tmp_path / "b")}, ToolContext(cwd=tmp_path))
    assert result.content.splitlines() == ["b/y.txt"]


async def test_absolute_pattern_searches_from_its_literal_folders(tmp_path):
    wanted = touch(tmp_path / "pkg" / "mod.py", 1_000)
    touch(tmp_path / "other" / "mod.py", 1_000)
    result = await run({"pattern": str(tmp_path / "pkg" / "*.py")}, ToolContext(cwd=Path("/")))
    assert result.content.splitlines() == [str(wanted)]


async def test_no_match_says_no_files_found(tmp_path):
    touch(tmp_path / "a.txt", 1_000)
    result = await run({"pattern": "**/*.rs"}, ToolContext(cwd=tmp_path))
    assert result.content == "No files found"
    assert not result.is_error


async def test_more_than_100_results_are_truncated_with_a_note(tmp_path):
    for n in range(150):
        touch(tmp_path / f"f{n:03}.txt", 1_000 + n)
    result = await run({"pattern": "*.txt"}, ToolContext(cwd=tmp_path))
    lines = result.content.splitlines()
    assert len(lines) == 101
    assert lines[0] == "f149.txt"
    assert lines[-1] == TRUNCATED_NOTE
    assert result.data["count"] == 150 and result.data["truncated"]


async def test_git_folder_and_gitignored_files_are_skipped(tmp_path):
    touch(tmp_path / "a.py", 1_000)
    touch(tmp_path / ".git" / "hooks" / "b.py", 1_000)
    touch(tmp_path / "build" / "c.py", 1_000)
    (tmp_path / ".gitignore").write_text("build/\n")
    result = await run({"pattern": "**/*.py"}, ToolContext(cwd=tmp_path))
    assert result.content.splitlines() == ["a.py"]


async def test_missing_directory_is_an_error(tmp_path):
    result = await run({"pattern": "*", "path": str(tmp_path / "nope")}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert result.content.startswith("Directory does not exist")


async def test_without_ripgrep_python_glob_gives_the_same_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(glob_module, "find_rg", lambda: None)
    touch(tmp_path / "old.py", 1_000)
    touch(tmp_path / "pkg" / "new.py", 2_000)
    touch(tmp_path / ".git" / "x.py", 3_000)
    result = await run({"pattern": "**/*.py"}, ToolContext(cwd=tmp_path))
    assert result.content.splitlines() == ["pkg/new.py", "old.py"]


def test_glob_is_read_only_and_concurrency_safe():
    assert GlobTool().is_read_only({"pattern": "*"})
    assert GlobTool().is_concurrency_safe({"pattern": "*"})


async def test_files_ignored_by_a_nested_gitignore_are_not_listed_in_a_git_repo(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    touch(tmp_path / "src" / "a.py", 1_000)
    touch(tmp_path / ".cache" / "v" / "b.py", 2_000)
    (tmp_path / ".cache" / ".gitignore").write_text("*\n")
    result = await run({"pattern": "**/*"}, ToolContext(cwd=tmp_path))
    assert "src/a.py" in result.content.splitlines()
    assert ".cache" not in result.content and "/.git/" not in result.content
