"""Bash: output, exit codes, streaming, caps, and killing the whole process group."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from pathlib import Path

import pytest

from agent_tui.tools.base import Progress, ToolContext, ToolResult
from agent_tui.tools.bash import BashTool
from tests.engine_helpers import alive, tagged_pids
from tests.tool_call import call_tool


def spawn_children() -> tuple[str, str]:
    """A command starting two background sleeps and waiting on them, and the tag its processes carry.

    Pids printed inside the sandbox are its own PID namespace's, so the processes are found on the
    host by the tag in their command lines instead (the shell's, bwrap's and the sleeps')."""
    tag = f"{secrets.randbelow(10**8):08d}"
    return f"sleep 100.{tag}1 & echo child; sleep 100.{tag}2 & echo child; echo shell; wait", tag


async def run(input: dict, ctx: ToolContext) -> tuple[list[Progress], ToolResult]:
    items = await call_tool(BashTool(), input, ctx)
    result = items[-1]
    assert isinstance(result, ToolResult)
    return items[:-1], result


def started(text: str) -> int:
    return len(re.findall(r"^(?:child|shell)$", text, re.M))


async def wait_for_pids(progress: asyncio.Queue, tag: str, count: int = 3) -> list[int]:
    seen = ""
    while started(seen) < count:
        seen += (await asyncio.wait_for(progress.get(), 30)).text + "\n"
    pids = tagged_pids(tag)
    assert len(pids) >= count, pids
    return pids


async def drive(input: dict, ctx: ToolContext, progress: asyncio.Queue) -> ToolResult:
    async for item in BashTool().call(input, ctx):
        if isinstance(item, Progress):
            progress.put_nowait(item)
        else:
            return item
    raise AssertionError("no result")


async def test_output_is_the_result(tmp_path):
    _, result = await run({"command": "echo hello"}, ToolContext(cwd=tmp_path))
    assert result.content == "hello"
    assert not result.is_error
    assert result.data["exit_code"] == 0


async def test_stdout_and_stderr_are_merged_in_order(tmp_path):
    _, result = await run({"command": "echo one; echo two >&2; echo three"}, ToolContext(cwd=tmp_path))
    assert result.content == "one\ntwo\nthree"


async def test_non_zero_exit_is_an_error_with_the_exit_code(tmp_path):
    _, result = await run({"command": "echo failing; exit 3"}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert result.content == "failing\n\nExit code 3"
    assert result.data["exit_code"] == 3


async def test_empty_successful_output_says_so(tmp_path):
    _, result = await run({"command": "true"}, ToolContext(cwd=tmp_path))
    assert result.content == "(Command completed with no output)"
    assert not result.is_error


async def test_command_runs_in_the_context_cwd(tmp_path):
    _, result = await run({"command": "pwd"}, ToolContext(cwd=tmp_path))
    assert Path(result.content).resolve() == tmp_path.resolve()


async def test_output_streams_as_progress_while_running(tmp_path):
    progress, result = await run(
        {"command": "echo first; sleep 0.4; echo second; sleep 0.4"}, ToolContext(cwd=tmp_path)
    )
    assert [p.text for p in progress] == ["first", "second"]
    assert result.content == "first\nsecond"


async def test_a_flood_of_output_yields_few_progress_events(tmp_path):
    command = "for i in $(seq 1 20); do seq 1 2000; sleep 0.05; done"
    started = time.monotonic()
    progress, result = await run({"command": command}, ToolContext(cwd=tmp_path))
    elapsed = time.monotonic() - started
    assert len(result.data["stdout"].splitlines()) == 40_000
    assert 0 < len(progress) <= elapsed * 10 + 2


async def test_long_output_keeps_head_and_tail_around_a_marker(tmp_path):
    _, result = await run({"command": "seq 1 100000"}, ToolContext(cwd=tmp_path))
    text = result.content
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("99999\n100000")
    marker = re.search(r"\.\.\. \[(\d+) characters truncated\] \.\.\.", text)
    assert marker is not None
    full_length = len("".join(f"{n}\n" for n in range(1, 100001)))
    assert int(marker.group(1)) == full_length - 30_000
    assert len(text) < 30_100


async def test_timeout_kills_the_whole_process_group(tmp_path):
    command, tag = spawn_children()
    _, result = await run({"command": command, "timeout": 3000}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert result.content.endswith("Command timed out after 3000ms")
    assert started(result.content) == 3
    assert tagged_pids(tag) == []


async def test_cancellation_kills_the_process_group_and_propagates(tmp_path):
    progress: asyncio.Queue = asyncio.Queue()
    command, tag = spawn_children()
    task = asyncio.create_task(drive({"command": command}, ToolContext(cwd=tmp_path), progress))
    pids = await wait_for_pids(progress, tag)
    assert all(alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(alive(pid) for pid in pids)
    assert tagged_pids(tag) == []


async def test_abort_kills_the_process_group_and_reports_the_interruption(tmp_path):
    progress: asyncio.Queue = asyncio.Queue()
    ctx = ToolContext(cwd=tmp_path)
    command, tag = spawn_children()
    task = asyncio.create_task(drive({"command": command}, ctx, progress))
    pids = await wait_for_pids(progress, tag)
    ctx.abort.set()
    result = await asyncio.wait_for(task, 30)
    assert result.is_error
    assert result.content.endswith("Command was interrupted by the user.")
    assert not any(alive(pid) for pid in pids)


async def test_term_ignoring_children_are_killed_after_the_grace(tmp_path):
    tag = f"{secrets.randbelow(10**8):08d}"
    command = f"trap '' TERM; sleep 100.{tag} & echo child; echo shell; wait"
    progress: asyncio.Queue = asyncio.Queue()
    ctx = ToolContext(cwd=tmp_path)
    task = asyncio.create_task(drive({"command": command}, ctx, progress))
    pids = await wait_for_pids(progress, tag, 2)  # the trap is set before the lines are printed
    ctx.abort.set()
    result = await asyncio.wait_for(task, 30)
    assert result.content.endswith("Command was interrupted by the user.")
    assert not any(alive(pid) for pid in pids)
    assert tagged_pids(tag) == []


async def test_run_in_background_returns_an_id_and_keeps_the_shell(tmp_path):
    ctx = ToolContext(cwd=tmp_path, session_dir=tmp_path / "session")
    _, result = await run({"command": "echo started; sleep 100", "run_in_background": True}, ctx)
    assert result.content.startswith("Command running in background with ID: bash_1")
    shell = ctx.state["background_shells"]["bash_1"]
    try:
        assert shell.exit_code is None
        for _ in range(100):
            if shell.output_path.read_text() == "started\n":
                break
            await asyncio.sleep(0.05)
        assert shell.output_path.read_text() == "started\n"
        assert str(shell.output_path) in result.content
    finally:
        await shell.stop()
    assert shell.exit_code is not None
    assert not alive(shell.process.pid)


async def test_data_carries_exit_code_output_and_duration(tmp_path):
    _, result = await run({"command": "echo out; sleep 0.1"}, ToolContext(cwd=tmp_path))
    assert result.data["stdout"] == "out\n"
    assert result.data["exit_code"] == 0
    assert result.data["duration"] >= 0.1


def test_read_only_commands_are_read_only_and_concurrency_safe():
    tool = BashTool()
    assert tool.is_read_only({"command": "ls -la && git status"})
    assert tool.is_concurrency_safe({"command": "cat README.md | grep x"})


def test_writing_commands_are_neither_read_only_nor_concurrency_safe():
    tool = BashTool()
    assert not tool.is_read_only({"command": "rm -rf build"})
    assert not tool.is_concurrency_safe({"command": "echo hi > f"})


def test_background_commands_are_not_concurrency_safe():
    assert not BashTool().is_concurrency_safe({"command": "sleep 1", "run_in_background": True})


async def test_empty_command_is_rejected(tmp_path):
    _, result = await run({"command": "   "}, ToolContext(cwd=tmp_path))
    assert result.is_error
    assert result.content == "command must not be empty."

