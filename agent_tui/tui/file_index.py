"""Fuzzy `@` completion over the project's files (docs/architecture.md §8).

The list is ripgrep's (`rg --files`: .gitignore, .ignore and hidden files honoured as the Grep
and Glob tools see them), read once in a thread and read again in the background when older
than `STALE_AFTER` seconds.  A query matches a path holding its characters in order; matches
rank as fzf's do for a person choosing a file: the query inside the file's name first, then
inside the path, then the tightest spread of its characters, then the shortest path.  The
filters scan all paths joined by newlines at once (a substring search, then a regular
expression), so only the paths they let through are ranked in Python.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from bisect import bisect_right
from pathlib import Path

# Seconds after which the list is read again (in the background; the old one answers meanwhile).
STALE_AFTER = 30.0
# Matches ranked at most (a one-letter query matches nearly every path).
RANK_AT_MOST = 2000
# Paths one regular-expression scan covers before the lock is offered back (about a millisecond).
SCAN_BLOCK = 2000
# Seconds ripgrep may take to list the files.
LIST_TIMEOUT = 20.0


class FileIndex:
    """The files under `cwd`, relative to it, as ripgrep lists them."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._paths: list[str] = []
        self._lower = ""  # every path in lower case, one a line
        self._starts: list[int] = []  # where each path's line starts in `_lower`
        self.read_at: float | None = None
        self._lock = threading.Lock()  # one read at a time

    @property
    def count(self) -> int:
        return len(self._paths)

    def refresh(self, *, unless_younger_than: float = 0.0) -> None:
        """Read the list now, in the caller's thread; when another thread is reading it, wait
        for that read and keep it if it is younger than `unless_younger_than` seconds."""
        with self._lock:
            if self.read_at is not None and self.age < unless_younger_than:
                return
            paths = sorted(_rg_files(self.cwd))
            lowered = [path.lower() for path in paths]
            starts, offset = [], 0
            for path in lowered:
                starts.append(offset)
                offset += len(path) + 1
            # Swapped in together: a search in another thread sees the old list or the new one.
            self._paths, self._lower, self._starts = paths, "\n".join(lowered), starts
            self.read_at = time.monotonic()

    @property
    def age(self) -> float:
        """Seconds since the list was read (infinite before)."""
        return float("inf") if self.read_at is None else time.monotonic() - self.read_at

    @property
    def stale(self) -> bool:
        return self.age > STALE_AFTER

    def search(self, query: str, limit: int, *, fuzzy: bool = True, rank_at_most: int = RANK_AT_MOST) -> list[str]:
        """Up to `limit` paths matching `query`, best first: those holding it whole (a scan at C
        speed, a millisecond or two over 50,000 paths), then, with `fuzzy` and room left, those
        holding its characters in order (a regular-expression scan, some tens of milliseconds).
        The first `rank_at_most` paths found are ranked (a one-letter query finds nearly all)."""
        query = query.strip().lower()
        paths, lower, starts = self._paths, self._lower, self._starts
        if not query or not paths:
            return []
        found: dict[int, None] = {}
        position = 0
        while len(found) < rank_at_most and (at := lower.find(query, position)) >= 0:
            line = bisect_right(starts, at) - 1
            found[line] = None
            position = starts[line + 1] if line + 1 < len(starts) else len(lower)
        if fuzzy and len(found) < limit:
            self._fuzzy(query, found, rank_at_most)
        return sorted((paths[line] for line in found), key=lambda path: _rank(path, query))[:limit]

    def _fuzzy(self, query: str, found: dict[int, None], rank_at_most: int) -> None:
        """Add to `found` the lines holding `query`'s characters in order. The scan goes a block
        of `SCAN_BLOCK` paths at a time: a regular expression keeps the interpreter's lock for
        its whole scan, and between blocks the UI thread gets it back (a key waits a block, not
        the whole list)."""
        lower, starts = self._lower, self._starts
        matcher = _subsequence(query)
        for first in range(0, len(starts), SCAN_BLOCK):
            position = starts[first]
            end = starts[first + SCAN_BLOCK] if first + SCAN_BLOCK < len(starts) else len(lower)
            while len(found) < rank_at_most and (match := matcher.search(lower, position, end)):
                line = bisect_right(starts, match.start()) - 1
                found[line] = None
                position = starts[line + 1] if line + 1 < len(starts) else len(lower)
            if len(found) >= rank_at_most:
                return


def _subsequence(query: str) -> re.Pattern[str]:
    """The query's characters in order within one line: `d[^i\\n]*i[^s\\n]*s...`, each gap
    taking what is not the next character, so a line that fails fails without backtracking."""
    parts = [re.escape(query[0])]
    for ch in query[1:]:
        parts.append(f"[^{re.escape(ch)}\\n]*{re.escape(ch)}")
    return re.compile("".join(parts))


def _rank(path: str, query: str) -> tuple[int, int, int, str]:
    lowered = path.lower()
    name = lowered.rsplit("/", 1)[-1]
    if query in name:
        place = 0 if name.startswith(query) else 1
    elif query in lowered:
        place = 2
    elif _spread(name, query) is not None:
        place = 3
    else:
        place = 4
    spread = _spread(lowered, query)
    return place, spread if spread is not None else len(path), len(path), path


def _spread(text: str, query: str) -> int | None:
    """How many characters the query's characters span in `text`, matched from the right (so
    a match in the file's name wins), or None when they are not all there in order."""
    end = position = len(text)
    for ch in reversed(query):
        position = text.rfind(ch, 0, position)
        if position < 0:
            return None
    return end - position


def _rg_files(cwd: Path) -> list[str]:
    from ..tools.grep import find_rg  # loaded with completion, not for the first frame

    rg = find_rg()
    if rg is None:
        return []
    try:
        out = subprocess.run([rg, "--no-config", "--files", "--hidden", "--glob", "!.git"], cwd=cwd,
                             capture_output=True, timeout=LIST_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    text = out.stdout.decode("utf-8", "replace")
    return [line.removeprefix("./") for line in text.split("\n") if line]
