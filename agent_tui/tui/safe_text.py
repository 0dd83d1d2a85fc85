"""Model and tool text made harmless for the terminal before the TUI draws it.

Textual passes an ESC inside a string through to the terminal, so a model or a
command's output could set the window title, clear the screen or write to the
clipboard.  Colour codes (SGR) are dropped; every other control character is
shown as its Unicode control picture (ESC as ␛), so nothing is hidden from the
person reading a permission prompt and nothing reaches the terminal.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from ..hidden_text import HIDDEN, has_hidden

if TYPE_CHECKING:
    from textual.content import Content

    from ..engine import events as ev

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
# C0 controls except \t and \n, DEL, and the C1 controls (0x9b is an 8-bit CSI, 0x9d an OSC).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0D:
        return ""  # a carriage return only moves the cursor; the text around it stays visible
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def terminal_safe(text: str) -> str:
    """`text` with no character a terminal would act on, except newline and tab."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_picture, _SGR.sub("", text.replace("\r\n", "\n")))


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def safe_event(event: ev.Event) -> ev.Event:
    """`event` with every text it carries made terminal-safe (the same object when already clean)."""
    changes = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if isinstance(value, str | list | dict):
            cleaned = _clean(value)
            if cleaned != value:
                changes[f.name] = cleaned
    return dataclasses.replace(event, **changes) if changes else event


_HIDDEN = HIDDEN


def spell_hidden(text: str) -> str:
    """`text` with each hidden character written out as `<U+202E>` (for plain, padded cells)."""
    return HIDDEN.sub(lambda m: f"<U+{ord(m.group()):04X}>", text) if has_hidden(text) else text


def reveal_hidden(text: str, style: str = "") -> Content:
    """`text` in `style`, each hidden character drawn as a reverse-video `<U+202E>` token."""
    from textual.content import Content

    if not has_hidden(text):
        return Content.styled(text, style) if style else Content(text)
    parts: list[tuple[str, str] | str] = []
    at = 0
    for match in _HIDDEN.finditer(text):
        if match.start() > at:
            parts.append((text[at:match.start()], style) if style else text[at:match.start()])
        parts.append((f"<U+{ord(match.group()):04X}>", "reverse bold"))
        at = match.end()
    if at < len(text):
        parts.append((text[at:], style) if style else text[at:])
    return Content.assemble(*parts)
