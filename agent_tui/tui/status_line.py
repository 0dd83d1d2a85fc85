"""The `statusLine` setting (Claude Code's): a command whose first line of output shows under the input.

`{"statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}}`.  The command gets
the session as JSON on stdin (Claude Code's fields: session id, transcript path, cwd, model,
workspace, version, cost, plus the permission mode) and runs again when the engine publishes
something, at most once every `MIN_INTERVAL` seconds (events in between are folded into one run
after it), never two at a time, and is killed after `timeout` seconds (`TIMEOUT` by default),
keeping the last line it showed.  ANSI colours in its output are kept; other escapes are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Static

# Seconds between two runs, at least: "a few times a second" at most.
MIN_INTERVAL = 0.3
# Seconds a run may take before it is killed.
TIMEOUT = 5.0
# Characters of output read: one status line, not a log.
MAX_OUTPUT = 16_384


def status_payload(session: Any, started_at: float) -> dict[str, Any]:
    """What the command reads on stdin (Claude Code's shape, where agent-tui has the values)."""
    from .. import __version__

    store = getattr(session, "store", None)
    cost = session.cost_usd() if callable(getattr(session, "cost_usd", None)) else None
    cwd = str(session.cwd)
    return {
        "hook_event_name": "Status",
        "session_id": session.session_id,
        "transcript_path": str(store.path) if store is not None else None,
        "cwd": cwd,
        "model": {"id": session.model.name, "display_name": session.model.label},
        "workspace": {"current_dir": cwd, "project_dir": cwd},
        "version": __version__,
        "output_style": {"name": "default"},
        "permission_mode": session.permission_mode,
        "cost": {"total_cost_usd": cost or 0.0, "total_duration_ms": int((time.monotonic() - started_at) * 1000)},
    }


class StatusLine(Static):
    """The line under the input; hidden until the command has printed something."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.command: str | None = None
        self.timeout = TIMEOUT
        self.cwd: Path | None = None
        self.payload: Callable[[], dict[str, Any]] | None = None
        self.runs = 0
        self._last_run = float("-inf")
        self._run_task: asyncio.Task[None] | None = None
        self._again = False

    def configure(self, setting: dict[str, Any] | None, cwd: Path, payload: Callable[[], dict[str, Any]]) -> None:
        self.command = setting.get("command") if setting else None
        timeout = setting.get("timeout") if setting else None
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
            self.timeout = float(timeout)
        self.cwd, self.payload = cwd, payload
        self.display = False
        self.poke()

    def poke(self) -> None:
        """Something changed: run the command now, or once the interval since the last run is over."""
        if not self.command or self.payload is None:
            return
        if self._run_task is not None and not self._run_task.done():
            self._again = True
            return
        wait = self._last_run + MIN_INTERVAL - time.monotonic()
        self._run_task = asyncio.get_running_loop().create_task(self._run(max(wait, 0.0)))

    async def _run(self, wait: float) -> None:
        if wait:
            await asyncio.sleep(wait)
        self._last_run = time.monotonic()
        self._again = False
        self.runs += 1
        line = await self._output()
        if line is not None:
            self.update(Text.from_ansi(line, no_wrap=True, overflow="ellipsis"))
            self.display = bool(line.strip())
        if self._again:
            self._run_task = asyncio.get_running_loop().create_task(self._run(MIN_INTERVAL))

    async def _output(self) -> str | None:
        """The command's first line, or None when it failed or ran out of time."""
        assert self.command is not None and self.payload is not None
        try:
            data = json.dumps(self.payload(), default=str).encode()
            process = await asyncio.create_subprocess_shell(
                self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, cwd=self.cwd, start_new_session=True)
        except (OSError, ValueError):
            return None
        try:
            out, _ = await asyncio.wait_for(process.communicate(data), self.timeout)
        except (TimeoutError, OSError):
            return None
        finally:
            if process.returncode is None:  # out of time, or the app is closing: the whole group goes
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
        if process.returncode != 0:
            return None
        text = out[:MAX_OUTPUT].decode("utf-8", errors="replace")
        return text.splitlines()[0] if text.strip() else ""

    def on_unmount(self) -> None:
        if self._run_task is not None:
            self._run_task.cancel()
