"""Read keeps its memory bounded whatever the file holds, and says what it left out."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from agent_tui.engine.loop.query import TerminalReason
from agent_tui.tools.base import ToolContext
from agent_tui.tools.read import MAX_LINE_CHARS, MAX_WINDOW_CHARS
from tests.engine_helpers import make_session, tool_results
from tests.loopback import reply, tool_use
from tests.test_tool_read import run

MB = 1 << 20


def one_line_file(path: Path, size: int) -> Path:
    """`size` bytes and no newline: text at the start (so it is not taken for binary), then a hole."""
    with path.open("wb") as f:
        f.write(b"a" * 20_000)
        f.truncate(size)
    return path


@pytest.mark.parametrize("size", [256 * MB, pytest.param(1024 * MB, marks=pytest.mark.slow, id="1GiB")])
async def test_reading_a_huge_one_line_file_keeps_memory_bounded(api, tmp_path, size):
    path = one_line_file(tmp_path / "huge.log", size)
    api.push(reply(tool_use("Read", {"file_path": str(path)}, id="t_read")), reply("It is one long line."))
    session = make_session(api.url, tmp_path)

    tracemalloc.start()
    began = time.monotonic()
    try:
        terminal = await session.submit("what is in huge.log?")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED
    assert peak < 16 * MB, f"peak {peak / MB:.0f} MiB"  # the file is 256 MiB or 1 GiB
    assert time.monotonic() - began < 30 * size / (256 * MB)
    [result] = tool_results(api.requests[1].body)
    content = str(result["content"])
    assert f"1\t{'a' * MAX_LINE_CHARS}" in content and "a" * (MAX_LINE_CHARS + 1) not in content
    assert "1 line(s) longer than 2000 characters were truncated" in content


async def test_a_window_stops_at_its_character_budget_and_says_where(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("".join(f"{n:04d}" + "y" * 1500 + "\n" for n in range(1, 1001)))
    result = await run({"file_path": str(path)}, ToolContext(cwd=tmp_path))
    shown = [line for line in result.content.split("\n\n(")[0].splitlines()]
    assert 100 < len(shown) < 200
    assert len(result.content) <= MAX_WINDOW_CHARS + 10 * len(shown) + 500
    last = len(shown)
    assert shown[-1].startswith(f"{last}\t{last:04d}")
    assert f"Output stopped at {MAX_WINDOW_CHARS} characters, before line {last + 1}" in result.content
    assert f"Showing lines 1-{last} of 1000" in result.content
    # The model can read on from there.
    more = await run({"file_path": str(path), "offset": last + 1, "limit": 3}, ToolContext(cwd=tmp_path))
    assert more.content.startswith(f"{last + 1}\t{last + 1:04d}")


async def test_lines_are_counted_the_same_with_and_without_a_final_newline(tmp_path):
    for text, count in (("a\nb\n", 2), ("a\nb", 2), ("a\r\nb\r\n", 2), ("\n\n", 2), ("x", 1)):
        path = tmp_path / "f.txt"
        path.write_text(text, newline="")
        result = await run({"file_path": str(path), "limit": 1}, ToolContext(cwd=tmp_path))
        assert result.data["total_lines"] == count, text
        assert not result.content.splitlines()[0].endswith("\r")
    path.write_text("one\ntwo\n")
    result = await run({"file_path": str(path), "offset": 5}, ToolContext(cwd=tmp_path))
    assert "shorter than the provided offset (5). The file has 2 lines." in result.content


@pytest.mark.slow
async def test_a_window_deep_in_a_1_gib_file_reads_in_bounded_memory(tmp_path):
    path = tmp_path / "big.log"
    with path.open("wb") as f:  # 1,024 lines of 1 MiB each, mostly holes: a text start to each
        for n in range(1024):
            f.seek(n * MB)
            f.write(f"line {n + 1} ".encode() + b"x" * 20_000)
            f.seek((n + 1) * MB - 1)
            f.write(b"\n")
    tracemalloc.start()
    try:
        result = await run({"file_path": str(path), "offset": 1000, "limit": 3}, ToolContext(cwd=tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MB, f"peak {peak / MB:.0f} MiB"
    lines = result.content.splitlines()
    assert lines[0].startswith("1000\tline 1000 x") and lines[2].startswith("1002\tline 1002 x")
