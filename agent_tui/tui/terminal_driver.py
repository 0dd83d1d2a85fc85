"""The Linux driver for a terminal that may go away (`terminal.py` says why and what then)."""

from __future__ import annotations

import contextlib
import os
import selectors
from codecs import getincrementaldecoder
from typing import Any

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from .terminal import GuardedFile, TerminalGuard


class GuardedDriver(LinuxDriver):
    """Textual's Linux driver that never blocks on, writes to, or spins over a dead terminal."""

    def __init__(self, app: Any, **options: Any) -> None:
        super().__init__(app, **options)
        self._guard: TerminalGuard | None = getattr(app, "terminal_guard", None)
        self._file = GuardedFile(self._file, self._guard)

    def write(self, data: str) -> None:
        if self._guard is not None and self._guard.terminal_dead:
            return
        super().write(data)

    def run_input_thread(self) -> None:
        """Read keys as Textual does; the end of input or a read error means the terminal is gone."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        try:
            while not self.exit_event.is_set():
                try:
                    ready = selector.select(0.1)
                    data = os.read(self.fileno, 4096) if ready else None
                except OSError:
                    data = b""
                if data is not None:
                    if not data:
                        if self._guard is not None:
                            self._guard.terminal_gone()
                        return
                    for event in parser.feed(decode(data)):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            with contextlib.suppress(EOFError, ParseError):
                for _event in parser.feed(""):
                    pass
