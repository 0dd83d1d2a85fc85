"""When the terminal goes away: save the session and exit, never block on the dead terminal.

A closed window, an ssh drop or `tmux kill-server` ends the terminal under a running app:
SIGHUP arrives, and every read or write on the terminal fails.  Left to itself Textual
(8.2) hangs then: its writer thread dies on the first failed write, the next writes block
the main thread on the thread's full queue (deaf to SIGTERM), and its input thread spins
on the end of input.  So:

- `GuardedDriver` (the Linux driver, `terminal_driver.py`) writes through a file that turns a failed write into
  "the terminal is gone" and drops every later write, and reads input until the end of it
  or an error, which count as the terminal gone too;
- `TerminalGuard` takes SIGHUP and SIGTERM (plain signal handlers: they run even while the
  event loop is stuck), asks the app to quit as Ctrl+Q does (the session is aborted and
  closed, its transcript flushed and its lock released), and should that take longer than
  `EXIT_GRACE`, closes the transcript itself and ends the process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import IO, Any

# Seconds the app's own shutdown gets, once the terminal is gone, before the process ends anyway.
EXIT_GRACE = 0.7
# The exit status when the terminal went away (as a shell reports a process killed by SIGHUP).
# (Windows has neither SIGHUP nor a pty to lose: there only SIGTERM is taken.)
_SIGHUP = getattr(signal, "SIGHUP", None)
HANGUP_STATUS = 128 + (_SIGHUP or 1)
_SIGNALS = tuple(s for s in (_SIGHUP, signal.SIGTERM) if s is not None)


class TerminalGuard:
    """Ends the app promptly, its session saved, when its terminal goes away or it is killed."""

    def __init__(self, rescue: Callable[[], None]) -> None:
        # Saves what can be saved when the shutdown overruns (called from another thread).
        self._rescue = rescue
        self._quit: Callable[[int], None] | None = None
        self._loop: Any = None
        self._lock = threading.Lock()
        self._previous: dict[int, Any] = {}
        self.terminal_dead = False
        self.status: int | None = None

    def install(self) -> None:
        """Take SIGHUP and SIGTERM (from the main thread, before the app runs)."""
        for signum in _SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signum, previous)
        self._previous.clear()

    def attach(self, loop: Any, quit: Callable[[int], None]) -> None:
        """The app's loop, and how to ask it to quit with a status (run on that loop)."""
        self._loop, self._quit = loop, quit

    def _on_signal(self, signum: int, _frame: object) -> None:
        # SIGHUP means the terminal is gone; after SIGTERM it may still be there to restore.
        self.stop(128 + signum, terminal_dead=signum == _SIGHUP)

    def terminal_gone(self) -> None:
        """A read or write on the terminal failed: it is gone (any thread)."""
        self.stop(HANGUP_STATUS, terminal_dead=True)

    def stop(self, status: int, *, terminal_dead: bool) -> None:
        if terminal_dead:
            self.terminal_dead = True
        with self._lock:
            if self.status is not None:
                return
            self.status = status
        threading.Thread(target=self._deadline, args=(status,), name="agent-tui-exit", daemon=True).start()
        if self._loop is not None and self._quit is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self._quit, status)

    def _deadline(self, status: int) -> None:
        time.sleep(EXIT_GRACE)
        with contextlib.suppress(BaseException):
            self._rescue()
        os._exit(status)


class GuardedFile:
    """The terminal as Textual's writer thread sees it: a failed write means the terminal is
    gone, and from then on writes are dropped, so the thread keeps emptying its queue."""

    def __init__(self, file: IO[str], guard: TerminalGuard | None) -> None:
        self._file = file
        self._guard = guard

    def _gone(self) -> bool:
        return self._guard is not None and self._guard.terminal_dead

    def _failed(self) -> None:
        if self._guard is not None:
            self._guard.terminal_gone()

    def write(self, text: str) -> None:
        if self._gone():
            return
        try:
            self._file.write(text)
        except (OSError, ValueError):
            self._failed()

    def flush(self) -> None:
        if self._gone():
            return
        try:
            self._file.flush()
        except (OSError, ValueError):
            self._failed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)
