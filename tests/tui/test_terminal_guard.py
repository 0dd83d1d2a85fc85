"""A terminal that goes away without a SIGHUP (input ends, writes fail), and a shutdown that
never finishes: agent-tui still exits within a second or two (`tui/terminal.py`)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import textwrap
import time

import pytest

from agent_tui.tui.terminal import EXIT_GRACE, HANGUP_STATUS
from tests.loopback import LoopbackServer

from .test_tmux import AGENT, WELCOME, clean_env

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pty")


def test_a_shutdown_stuck_on_a_full_write_queue_still_ends_the_process_with_the_session_saved(tmp_path):
    """The hang agent-tui used to show: the main thread blocked for good on the terminal's
    write queue. The guard saves the session and ends the process after its grace."""
    saved = tmp_path / "saved"
    script = textwrap.dedent(f"""
        import queue, sys
        from pathlib import Path
        from agent_tui.tui.terminal import TerminalGuard

        guard = TerminalGuard(lambda: Path({str(saved)!r}).write_text("saved"))
        guard.install()
        guard.terminal_gone()
        full = queue.Queue(1)
        full.put("frame")
        full.put("the next frame")  # blocks for ever, as Textual's did on a dead writer thread
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], timeout=10, capture_output=True, text=True)
    took = time.monotonic() - started
    assert done.returncode == HANGUP_STATUS, done.stderr
    assert saved.read_text() == "saved"
    assert EXIT_GRACE <= took < EXIT_GRACE + 3.0


def _read_until(fd: int, wanted: str, timeout: float) -> str:
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
            # The text without the escape sequences between its cells.
            if wanted in re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]", "", seen.decode(errors="replace")):
                return "found"
    return seen.decode(errors="replace")[-2000:]


def test_agent_tui_exits_when_its_terminal_closes_without_a_hangup_signal(tmp_path):
    """A pty that is not the process's controlling terminal: closing it sends no SIGHUP, only
    the end of input and failing writes. agent-tui used to spin on that end of input for ever."""
    project = tmp_path / "project"
    project.mkdir()
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    with LoopbackServer() as api:
        env = clean_env(api.url, tmp_path)
        # A session of its own (setsid) that never opens the pty itself: no controlling terminal.
        child = subprocess.Popen([AGENT], cwd=project, env=env, stdin=slave, stdout=slave, stderr=slave,
                                 start_new_session=True)
        os.close(slave)
        try:
            shown = _read_until(master, WELCOME, 20.0)
            assert shown == "found", f"no first frame; the terminal got:\n{shown}"
            os.close(master)
            closed = time.monotonic()
            status = child.wait(timeout=10)
            took = time.monotonic() - closed
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert status == HANGUP_STATUS
    assert took < 2.0, f"agent-tui took {took:.2f}s to exit after its terminal closed"
