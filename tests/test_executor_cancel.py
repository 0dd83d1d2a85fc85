"""A failing Bash cancels its siblings, and every sibling still gets a result, whatever
the step at which the cancellation reaches it (the executor alone, no model: the
interleavings are arranged, not raced)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_tui.engine import events as ev
from agent_tui.engine.loop.executor import StreamingToolExecutor
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult
from agent_tui.tools.read import ReadTool

CANCELLED = "Cancelled: parallel tool call Bash(make test) errored"


class FailingBash(BaseTool):
    """Stands in for a Bash call that exits non-zero once `release` is set (at once if None)."""

    name = "Bash"
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

    def __init__(self, release: asyncio.Event | None = None) -> None:
        self.release = release

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        if self.release is not None:
            await self.release.wait()
        yield ToolResult("Exit code 2\nmake: *** No rule to make target 'test'.", is_error=True)


def bash(id_: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": "make test"}}


def read(id_: str, path: Path) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Read", "input": {"file_path": str(path)}}


def executor_for(tmp_path: Path, bash_tool: BaseTool, events: list[ev.Event]) -> StreamingToolExecutor:
    return StreamingToolExecutor(
        {"Bash": bash_tool, "Read": ReadTool()},
        policy=PermissionPolicy(mode="bypassPermissions"),
        emit=events.append,
        make_context=lambda tid: ToolContext(cwd=tmp_path, tool_use_id=tid),
    )


async def settle(executor: StreamingToolExecutor) -> None:
    """Let every tool task end (cancelled ones too) and their callbacks run; no clock involved."""
    tasks = [t.task for t in executor.tracked if t.task is not None]
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0)


async def test_siblings_cancelled_before_their_first_step_still_get_results(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\n")
    events: list[ev.Event] = []
    executor = executor_for(tmp_path, FailingBash(), events)

    # All three start in the same tick; the Bash fails in its first step, before the Reads ever run.
    executor.add_tool(bash("t_bash"))
    executor.add_tool(read("t_read1", notes))
    executor.add_tool(read("t_read2", notes))
    await settle(executor)

    assert [t.status for t in executor.tracked] == ["done", "done", "done"]
    results = await executor.results()
    assert [r["tool_use_id"] for r in results] == ["t_bash", "t_read1", "t_read2"]
    assert [r["content"] for r in results[1:]] == [CANCELLED, CANCELLED]
    finished = {e.tool_use_id: e.status for e in events if isinstance(e, ev.ToolFinished)}
    assert finished == {"t_bash": "error", "t_read1": "cancelled", "t_read2": "cancelled"}


async def test_a_sibling_handed_over_in_the_tick_the_bash_fails_still_gets_a_result(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\n")
    release = asyncio.Event()
    events: list[ev.Event] = []
    executor = executor_for(tmp_path, FailingBash(release), events)
    executor.add_tool(bash("t_bash"))
    await asyncio.sleep(0)  # the Bash is running, waiting for its exit

    # The stream delivers the next block after the Bash's wake-up is already scheduled.
    release.set()
    executor.add_tool(read("t_read", notes))
    await settle(executor)

    assert all(t.status == "done" for t in executor.tracked)
    results = await executor.results()
    assert [(r["tool_use_id"], r["content"]) for r in results[1:]] == [("t_read", CANCELLED)]
    assert results[0]["is_error"] is True


async def test_every_interleaving_of_many_siblings_ends_with_one_result_each(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("alpha\n")
    for handed_before_failure in range(6):
        release = asyncio.Event()
        executor = executor_for(tmp_path, FailingBash(release), [])
        executor.add_tool(bash("t_bash"))
        for i in range(handed_before_failure):
            executor.add_tool(read(f"t_before{i}", notes))
        await asyncio.sleep(0)
        release.set()
        for i in range(5 - handed_before_failure):
            executor.add_tool(read(f"t_after{i}", notes))
        await settle(executor)

        assert all(t.status == "done" for t in executor.tracked), handed_before_failure
        results = await executor.results()
        assert len(results) == 6 and len({r["tool_use_id"] for r in results}) == 6
        assert results[0]["tool_use_id"] == "t_bash"
        assert all(r["content"] == CANCELLED for r in results if r["tool_use_id"].startswith("t_after"))
