"""The Linux driver for a terminal that may go away (`terminal.py` says why and what then)."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
from codecs import getincrementaldecoder
from typing import Any

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from .terminal import GuardedFile, TerminalGuard

# The answer to "which kitty keyboard flags are on?" (CSI ? u): CSI ? flags u.
_KEYBOARD_REPORT = re.compile(r"\x1b\[\?(\d+)u")


class KittyKeyboard(Message):
    """The terminal speaks the kitty keyboard protocol: Shift+Enter arrives apart from Enter."""


def take_keyboard_report(data: str) -> tuple[str, int | None]:
    """`data` without a keyboard-flags report (Textual would read it as typed text), and the
    flags it reported (None: no report in `data`)."""
    found = _KEYBOARD_REPORT.search(data)
    if found is None:
        return data, None
    return data[: found.start()] + data[found.end():], int(found.group(1))


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

    def start_application_mode(self) -> None:
        super().start_application_mode()
        if not constants.DISABLE_KITTY_KEY:
            self.write("\x1b[?u")  # which keyboard flags took? (a terminal without the protocol stays silent)
            self.flush()

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
                    text, flags = take_keyboard_report(decode(data))
                    if flags:
                        self.process_message(KittyKeyboard())
                    for event in parser.feed(text):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            with contextlib.suppress(EOFError, ParseError):
                for _event in parser.feed(""):
                    pass
