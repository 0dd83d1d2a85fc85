"""Shared file plumbing for the tools that change files (Write, Edit, MultiEdit).

A change is planned first (`FileSnapshot` of what is on disk + the new text),
so the permission prompt can show its diff, and committed later: an atomic
write that keeps the file's encoding, line endings and mode (made through the
folder pinned at the permission check, `pinned.py`), then the read-state cache
learns the new content so consecutive edits work.

Text is handled "logically": decoded, BOM stripped, CRLF folded to LF.  It is
encoded back with the file's own encoding and line ending at write time.
"""

from __future__ import annotations

import codecs
import difflib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from ..paths import shown_path

CRLF = "\r\n"
LF = "\n"
# Write's result shows the new file numbered; past this many lines it is clipped.
MAX_LINES_TO_RENDER = 16000
TRUNCATED_MESSAGE = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with Grep in order to "
    "find the line numbers of what you are looking for.</NOTE>"
)
FILE_NOT_FOUND = "File does not exist."

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class FileToolError(Exception):
    """A planned change cannot be made; the message is the tool result text."""


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket or directory: reading it could block or never end."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages ("a FIFO (named pipe)")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(
    path: str | os.PathLike[str], *, dir_fd: int | None = None, follow_symlinks: bool = True
) -> Any:
    """Open `path` for binary reading only if it is a regular file.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    the check runs on the opened descriptor, so a swap after a stat cannot slip through.
    `dir_fd` and `follow_symlinks=False` open a name inside an open folder without following a symlink.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path} is {file_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass(slots=True)
class Encoding:
    codec: str = "utf-8"
    bom: bytes = b""

    @property
    def errors(self) -> str:
        # Undecodable bytes in a UTF-8 file survive an edit untouched.
        return "surrogateescape" if self.codec == "utf-8" else "surrogatepass"


@dataclass(slots=True)
class FileSnapshot:
    """What is on disk at `path` now."""

    path: Path  # absolute, as the model named it
    target: Path  # the file actually written (a symlink is followed)
    exists: bool
    text: str = ""  # decoded, LF line endings
    encoding: Encoding | None = None
    line_ending: str | None = None  # None: no line break in the file
    mode: int | None = None


class SnapshotSource(Protocol):
    """Where a change's plan reads the file now: the pinned folder, or the editor's buffer."""

    def snapshot(self) -> FileSnapshot: ...


@dataclass(slots=True)
class PlannedChange:
    snapshot: FileSnapshot
    new_text: str

    @property
    def path(self) -> Path:
        return self.snapshot.path

    @property
    def created(self) -> bool:
        return not self.snapshot.exists

    def diff(self, cwd: Path) -> str:
        return unified_diff(self.snapshot.text, self.new_text, diff_label(self.path, cwd), created=self.created)


# ---------------------------------------------------------------- reading


def decode(raw: bytes) -> tuple[str, Encoding]:
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            enc = Encoding(codec, bom)
            try:
                return raw[len(bom) :].decode(codec, enc.errors), enc
            except UnicodeDecodeError:
                break
    enc = Encoding()
    return raw.decode("utf-8", enc.errors), enc


def detect_line_ending(text: str) -> str | None:
    """CRLF when most line breaks are CRLF, LF when there are breaks, else None."""
    crlf = text.count(CRLF)
    lf = text.count(LF) - crlf
    if crlf == 0 and lf == 0:
        return None
    return CRLF if crlf > lf else LF


def normalize_newlines(text: str) -> str:
    return text.replace(CRLF, LF)


def read_snapshot(path: Path) -> FileSnapshot:
    """Load `path` (a symlink followed); FileToolError when it is a directory or cannot be read.

    What validation and the permission prompt's diff see; the call itself reads through the folder
    pinned at the permission check (`pinned.PinnedFolder.snapshot`)."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    return snapshot_of(path, target, lambda: os.stat(target), lambda: open_regular(target))


def snapshot_of(
    path: Path, target: Path, stat_file: Callable[[], os.stat_result], open_file: Callable[[], BinaryIO]
) -> FileSnapshot:
    """The snapshot of `target` (shown as `path`), with how to stat and open it."""
    try:
        st = stat_file()
    except FileNotFoundError:
        return FileSnapshot(path=path, target=target, exists=False)
    except OSError as exc:
        raise FileToolError(f"Cannot access {path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise FileToolError(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(st.st_mode):
        raise FileToolError(
            f"{path} is {file_kind(st.st_mode)}, not a regular file; only regular files can be changed."
        )
    try:
        with open_file() as fh:
            raw = fh.read()
    except NotRegularFile as exc:
        raise FileToolError(f"{exc}; only regular files can be changed.") from exc
    except OSError as exc:
        raise FileToolError(f"Cannot read {path}: {exc.strerror or exc}") from exc
    text, enc = decode(raw)
    return FileSnapshot(
        path=path,
        target=target,
        exists=True,
        text=normalize_newlines(text),
        encoding=enc,
        line_ending=detect_line_ending(text),
        mode=stat.S_IMODE(st.st_mode),
    )


def similar_file(path: Path) -> Path | None:
    """A file in the same folder with the same stem and another extension."""
    try:
        siblings = sorted(path.parent.iterdir())
    except OSError:
        return None
    for sib in siblings:
        if sib.name != path.name and sib.stem == path.stem and sib.is_file():
            return sib
    return None


def file_not_found(path: Path) -> str:
    similar = similar_file(path)
    return f"{FILE_NOT_FOUND} Did you mean {similar}?" if similar else FILE_NOT_FOUND


# ---------------------------------------------------------------- writing


def encode(text: str, snapshot: FileSnapshot) -> bytes:
    """The bytes to store: the file's line endings and encoding (a new file: as given, UTF-8)."""
    if snapshot.line_ending == CRLF:
        text = normalize_newlines(text).replace(LF, CRLF)
    elif snapshot.line_ending == LF:
        text = normalize_newlines(text)
    enc = snapshot.encoding or Encoding()
    return enc.bom + text.encode(enc.codec, enc.errors)


# ---------------------------------------------------------------- display


def diff_label(path: Path, cwd: Path) -> str:
    shown = Path(shown_path(path, cwd, home=False)).as_posix()
    return shown.lstrip("/")


def unified_diff(old: str, new: str, label: str, *, created: bool = False) -> str:
    """A unified diff with a/ b/ headers (a new file's against /dev/null, as git writes it); a
    missing final newline is marked as git does."""
    old_lines = normalize_newlines(old).splitlines(keepends=True)
    new_lines = normalize_newlines(new).splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, "/dev/null" if created else f"a/{label}", f"b/{label}"):
        if line.endswith(LF):
            out.append(line)
        else:
            out.append(line + LF + "\\ No newline at end of file" + LF)
    return "".join(out)


def diff_counts(diff: str) -> tuple[int, int]:
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:
            continue  # the ---/+++ header
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def number_lines(text: str, start: int = 1) -> str:
    """The line number, a tab, the line: Claude Code's form of `cat -n`, without its six-column
    padding (every result stays in the history and is paid for on each later request)."""
    if not text:
        return ""
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(text.split(LF), start))


def numbered_file(text: str) -> str:
    lines = text.split(LF)
    if len(lines) > MAX_LINES_TO_RENDER:
        return number_lines(LF.join(lines[:MAX_LINES_TO_RENDER])) + TRUNCATED_MESSAGE
    return number_lines(text)


def updated_message(path: Path, snippet: str) -> str:
    return (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
        f"of the edited file:\n{snippet}"
    )


def created_message(path: Path) -> str:
    return f"File created successfully at: {path}"
