"""Write, Edit, MultiEdit and Read refuse FIFOs, devices and other non-regular files
without opening them for a blocking read, so a named pipe nobody writes to cannot hang
the agent before its permission check."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer
from agent_tui.tools._fileio import FileToolError, NotRegularFile, open_regular, read_snapshot
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import reply, tool_use


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A named pipe nobody writes to.  Should a reader block on it (the bug), a helper
    thread opens and closes its write end, so the run fails instead of hanging."""
    os.mkfifo(path)
    done = threading.Event()

    def release_blocked_readers() -> None:
        while not done.wait(0.05):
            with contextlib.suppress(OSError):  # ENXIO: no reader has it open
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    helper = threading.Thread(target=release_blocked_readers, daemon=True)
    helper.start()
    try:
        yield path
    finally:
        done.set()
        helper.join()


def changes_of(path: Path) -> list[tuple[str, dict]]:
    return [
        ("Write", {"file_path": str(path), "content": "data\n"}),
        ("Edit", {"file_path": str(path), "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": str(path), "edits": [{"old_string": "a", "new_string": "b"}]}),
        ("Read", {"file_path": str(path)}),
    ]


async def test_file_tools_on_a_fifo_are_refused_before_any_permission_prompt(api, tmp_path):
    with fifo(tmp_path / "pipe") as pipe:
        calls = changes_of(pipe)
        api.push(reply(*[tool_use(name, input, id=f"t{i}") for i, (name, input) in enumerate(calls)]), reply("ok"))
        session = make_session(api.url, tmp_path)
        rec = Recorder(session)
        auto_answer(session, PermissionAnswer("deny"))
        try:
            await session.submit("write to the pipe")
        finally:
            await session.aclose()

    assert rec.of(ev.PermissionRequested) == []
    results = tool_results(api.requests[1].body)
    assert [r["tool_use_id"] for r in results] == ["t0", "t1", "t2", "t3"]
    assert all(r["is_error"] for r in results)
    for r in results[:3]:
        assert r["content"] == f"{pipe} is a FIFO (named pipe), not a regular file; only regular files can be changed."
    assert results[3]["content"] == f"{pipe} is not a regular file."
    assert pipe.exists() and not pipe.is_file()
    assert check_history(session.history) == []


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_character_device_is_not_planned_as_a_file():
    with pytest.raises(FileToolError, match=r"^/dev/null is a character device, not a regular file"):
        read_snapshot(Path("/dev/null"))


def test_opening_a_fifo_for_reading_returns_at_once_and_is_refused(tmp_path):
    with fifo(tmp_path / "pipe") as pipe:
        # The check is on the opened descriptor, so a pipe swapped in after a stat is caught too.
        with pytest.raises(NotRegularFile, match="is a FIFO"):
            open_regular(pipe)
