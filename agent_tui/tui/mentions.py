"""`@path` mentions: completion candidates, and attaching the files as Reads.

An attached file reaches the model the way Claude Code sends one: the text of
a Read call and its result, ahead of the prompt.  The Read goes through the
session's own Read tool, so the file counts as read and may be edited next; an
image or a PDF arrives as the Read tool's own `image` or `document` block.  A word
of the prompt that is wholly the path of an image (a dragged or pasted file) is
attached too, without the `@`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tools.media import human_size, is_image_path

MENTION = re.compile(r"(?<![\w@])@((?:\\ |[^\s])+)")
MAX_CANDIDATES = 12
_WORD = re.compile(r"(?<!\S)'([^']+)'|(?<!\S)\"([^\"]+)\"|((?:\\ |\S)+)")


@dataclass
class Prompt:
    """What a person sent: the text as typed, and the files it mentions."""

    text: str
    files: list[Path] = field(default_factory=list)
    # Rules allowed while it runs (a custom command's `allowed-tools`).
    allowed_tools: tuple[str, ...] = ()

    @property
    def attachment_labels(self) -> list[str]:
        return [_label(p) for p in self.files]


def _label(path: Path) -> str:
    """"@a.py attached", and for an image its size: the transcript's one-line placeholder."""
    if not is_image_path(path):
        return f"@{path.name} attached"
    try:
        size = human_size(path.stat().st_size)
    except OSError:
        size = "unreadable"
    return f"@{path.name} attached · image {size}"


def mentioned_files(text: str, cwd: Path) -> list[Path]:
    """Existing files named by `@path` mentions, then image files named by a whole word of
    the prompt (a pasted path), in order, without duplicates."""
    found: list[Path] = []
    raws = [m.group(1).replace("\\ ", " ").rstrip(".,;:!?)") for m in MENTION.finditer(text)]
    for raw in raws + [w for w in _words(text) if is_image_path(w) and not w.startswith("@")]:
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else cwd / path
        if path.is_file() and path not in found:
            found.append(path)
    return found


def _words(text: str) -> list[str]:
    """The prompt's words, a quoted one or one whose spaces are escaped taken whole (terminals
    paste a dragged file's path so); an apostrophe inside a word is just a letter."""
    return [q1 or q2 or plain.replace("\\ ", " ") for q1, q2, plain in _WORD.findall(text)]


def path_candidates(partial: str, cwd: Path) -> list[str]:
    """Paths completing `partial` (the text after `@`), directories with a trailing `/`."""
    head, _, prefix = partial.rpartition("/")
    base = Path(head).expanduser() if head else Path(".")
    folder = base if base.is_absolute() else cwd / base
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    lower = prefix.lower()
    names = []
    for entry in entries:
        name = entry.name
        if name.startswith(".") and not prefix.startswith("."):
            continue
        if not name.lower().startswith(lower):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        names.append((not is_dir, name.lower(), name + ("/" if is_dir else "")))
    names.sort()
    start = head + "/" if head else ""
    return [start + name for _, _, name in names[:MAX_CANDIDATES]]


async def prompt_content(prompt: Prompt, session: Any) -> str | list[dict[str, Any]]:
    """The user message for `prompt`: plain text, or Read blocks (the session's own Read) then the text."""
    if not prompt.files:
        return prompt.text
    return [*await session.attachment_blocks(prompt.files), {"type": "text", "text": prompt.text}]
