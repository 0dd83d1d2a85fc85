"""Desktop notifications and the bell, for a turn that ends or a permission that waits
while the person is in another window.

The channel is the `preferredNotifChannel` setting, Claude Code's key and values:
`auto` (default: picked from the terminal), `iterm2` (OSC 9), `iterm2_with_bell`,
`kitty` (OSC 99), `ghostty` (OSC 777), `terminal_bell`, `notifications_disabled`;
`osc9` and `osc777` name the sequences directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from ..config import NOTIF_CHANNELS as CHANNELS

BEL = "\x07"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def osc9(title: str, body: str) -> str:
    return f"\x1b]9;{_clean(f'{title}: {body}' if body else title)}{BEL}"


def osc777(title: str, body: str) -> str:
    # Fields are separated by `;`: keep it out of the title.
    return f"\x1b]777;notify;{_clean(title).replace(';', ',')};{_clean(body)}{BEL}"


def osc99(title: str, body: str) -> str:
    """Kitty's protocol: the title, then the body, of one notification (id 1)."""
    return f"\x1b]99;i=1:d=0;{_clean(title)}\x1b\\\x1b]99;i=1:d=1:p=body;{_clean(body)}\x1b\\"


def auto_channel(environ: Mapping[str, str]) -> str:
    """The sequences a terminal is known to show, from what it says about itself."""
    program = environ.get("TERM_PROGRAM", "").lower()
    term = environ.get("TERM", "").lower()
    if program in ("iterm.app", "wezterm") or environ.get("WT_SESSION"):
        return "iterm2_with_bell"
    if program == "ghostty" or "ghostty" in term:
        return "ghostty"
    if "kitty" in term or environ.get("KITTY_WINDOW_ID"):
        return "kitty"
    if environ.get("VTE_VERSION") or term.startswith(("rxvt", "foot")):
        return "osc777"
    return "both"


def tmux_passthrough(sequence: str) -> str:
    """An escape sequence tmux hands on to the terminal outside it (with `allow-passthrough`
    on) instead of swallowing: DCS `tmux;` with every ESC doubled."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def sequences(channel: str, title: str, body: str, environ: Mapping[str, str] | None = None) -> str:
    """What to write to the terminal for one notification on `channel` (inside tmux, the
    notification sequences pass through to the outer terminal; tmux rings the bell itself)."""
    environ = os.environ if environ is None else environ
    if channel == "auto":
        channel = auto_channel(environ)
    notification, bell = _sequences(channel, title, body)
    if notification and environ.get("TMUX"):
        notification = tmux_passthrough(notification)
    return notification + bell


def _sequences(channel: str, title: str, body: str) -> tuple[str, str]:
    """The notification sequences of `channel`, and its bell."""
    if channel == "notifications_disabled":
        return "", ""
    if channel == "terminal_bell":
        return "", BEL
    if channel in ("iterm2", "osc9"):
        return osc9(title, body), ""
    if channel == "iterm2_with_bell":
        return osc9(title, body), BEL
    if channel in ("ghostty", "osc777"):
        return osc777(title, body), BEL
    if channel == "kitty":
        return osc99(title, body), BEL
    # An unknown terminal: both common desktop-notification sequences (others ignore them) and the bell.
    return osc9(title, body) + osc777(title, body), BEL


class Notifier:
    """Writes notifications to the terminal through `write` (the app's driver)."""

    def __init__(self, write: Callable[[str], None], channel: str | None = None) -> None:
        self.write = write
        self.channel = channel if channel in CHANNELS else "auto"

    def notify(self, title: str, body: str) -> None:
        data = sequences(self.channel, title, body)
        if data:
            self.write(data)


def _clean(text: str) -> str:
    """One line without control characters (they would end the sequence early)."""
    return _CONTROL.sub(" ", text).strip()[:200]
