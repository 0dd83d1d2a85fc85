"""The read-state cache: which files the model has seen, and whether they changed since.

Edit, MultiEdit and Write refuse a file the model has not read in this
session, or one that changed on disk after it was read (Claude Code's
rule).  Read records each read here; a successful write records the new
content, so consecutive edits need no re-read.

Records live in `ctx.state["read_files"][abs_path] = {"mtime": float,
"partial": bool, "sha256": str, "real": str, "stale": bool}`.

A file counts as changed when its mtime moved AND its content hash no longer
matches (an mtime bump without a content change, e.g. `touch`, is fine).  A file
over `HASH_LIMIT` recorded by Read is never loaded for this: its size and a hash
of its first and last `SAMPLE_BYTES` stand in for the content hash (`sample`).
`ReadStateWatcher` (watchfiles) marks entries stale as soon as their files
change on disk; a stale entry is always verified by hash, which also catches
a change that kept the mtime.  The stat/hash check stays the source of truth:
without a watcher, or for files outside its root, the answer is the same.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from ._fileio import decode, open_regular

log = logging.getLogger(__name__)

READ_FILES = "read_files"
# Bigger files recorded without content are not loaded: their size and a sample hash decide.
HASH_LIMIT = 4 * 1024 * 1024
SAMPLE_BYTES = 64 * 1024
NOT_READ_MESSAGE = "File has not been read yet. Read it first before writing to it."
MODIFIED_MESSAGE = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)


def state_key(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def content_hash(content: str | bytes) -> str:
    """A hash of the text as the model sees it: BOM stripped, CRLF folded to LF.

    So a hash of the raw bytes on disk equals a hash of the decoded text Read
    produced from them.
    """
    if isinstance(content, bytes):
        text = decode(content)[0]
    else:
        text = content.removeprefix("\ufeff")
    data = text.replace("\r\n", "\n").encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _files(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return state.setdefault(READ_FILES, {})


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _entry(path: str, content: str | bytes | None, partial: bool, mtime: float | None) -> dict[str, Any]:
    if mtime is None:
        mtime = _mtime(path) or 0.0
    sample = None
    if content is None:
        content = _disk_content(path, mtime)
        if content is None:
            sample = _sample(path, mtime)
    return {
        "mtime": mtime,
        "partial": partial,
        "sha256": None if content is None else content_hash(content),
        "sample": sample,
        "real": os.path.realpath(path),
        "stale": False,
    }


def _sample(path: str, mtime: float | None = None) -> tuple[int, str] | None:
    """A large file's size and a hash of its first and last `SAMPLE_BYTES`, read without loading
    it; None for a file within `HASH_LIMIT` (its content is hashed) or no longer of `mtime`."""
    try:
        with open_regular(path) as fh:
            info = os.fstat(fh.fileno())
            size = info.st_size
            if (mtime is not None and info.st_mtime != mtime) or size <= HASH_LIMIT:
                return None
            digest = hashlib.sha256(fh.read(SAMPLE_BYTES))
            if size > 2 * SAMPLE_BYTES:
                fh.seek(size - SAMPLE_BYTES)
            digest.update(fh.read(SAMPLE_BYTES))
    except OSError:
        return None
    return size, digest.hexdigest()


def _disk_content(path: str, mtime: float) -> bytes | None:
    """The file's bytes if they are still those of `mtime` (else None: the mtime alone decides)."""
    try:
        if os.stat(path).st_size > HASH_LIMIT:
            return None
        with open_regular(path) as fh:
            data = fh.read()
    except OSError:
        return None
    return data if _mtime(path) == mtime else None


def record_read(
    state: dict[str, Any],
    path: str | os.PathLike[str],
    content: str | bytes | None,
    partial: bool = False,
    mtime: float | None = None,
) -> None:
    """Remember that the model read `path`.

    `content` is the whole file as read (text or raw bytes), even when only a
    slice was shown (`partial`); None reads it from disk here, provided the
    file still has `mtime`.  `mtime` is the file's mtime taken before
    reading; by default it is taken now.
    """
    key = state_key(path)
    _files(state)[key] = _entry(key, content, partial, mtime)


def record_write(state: dict[str, Any], path: str | os.PathLike[str], content: str | bytes) -> None:
    """Remember the content a tool just wrote, so the next edit needs no re-read."""
    key = state_key(path)
    _files(state)[key] = _entry(key, content, False, None)


def lookup(state: dict[str, Any], path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record for `path`, also when it was recorded under another name for the same file."""
    files = state.get(READ_FILES) or {}
    key = state_key(path)
    entry = files.get(key)
    if entry is not None:
        return entry
    real = os.path.realpath(key)
    entry = files.get(real)
    if entry is not None:
        return entry
    for other in files.values():
        if other.get("real") == real:
            return other
    return None


def check_writable(state: dict[str, Any], path: str | os.PathLike[str]) -> str | None:
    """Claude Code's error text when `path` may not be written now, else None.

    A file that no longer exists may be written (Write creates it).
    """
    entry = lookup(state, path)
    if entry is None:
        return NOT_READ_MESSAGE
    key = state_key(path)
    mtime = _mtime(key)
    if mtime is None:
        return None
    same_mtime = mtime == entry.get("mtime")
    if same_mtime and not entry.get("stale"):
        return None
    expected = entry.get("sha256")
    if expected is None:
        sample = entry.get("sample")
        if sample is not None and tuple(sample) == _sample(key):
            entry["mtime"] = mtime
            entry["stale"] = False
            return None
        # Recorded without content or sample (unreadable then): the mtime decides.
        return None if same_mtime and sample is None else MODIFIED_MESSAGE
    try:
        with open_regular(key) as fh:
            actual = content_hash(fh.read())
    except OSError:
        return MODIFIED_MESSAGE
    if actual == expected:
        # Same content as the model saw: refresh so the next check is cheap again.
        entry["mtime"] = mtime
        entry["stale"] = False
        return None
    return MODIFIED_MESSAGE


class ReadStateWatcher:
    """Marks read-state entries stale when their files change under `root`.

    `watchfiles.awatch` runs in a task between `start()` and `stop()`.  If
    the watcher fails (no inotify watches left, root gone) it logs and ends;
    `check_writable` stays correct without it.
    """

    def __init__(
        self,
        state: dict[str, Any],
        root: str | os.PathLike[str],
        *,
        debounce_ms: int = 1600,
        step_ms: int = 50,
        force_polling: bool | None = None,
    ) -> None:
        self.state = state
        self.root = Path(os.path.abspath(root))
        self._debounce = debounce_ms
        self._step = step_ms
        self._force_polling = force_polling
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        if self.running:
            return
        self.error = None
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(self._stop), name="read-state-watcher")
        # awatch sets up its OS watches synchronously in its first step; let it take it.
        await asyncio.sleep(0)

    async def stop(self, timeout: float = 2.0) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=timeout)

    async def __aenter__(self) -> ReadStateWatcher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _run(self, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        try:
            if not self.root.is_dir():
                # watchfiles would silently watch nothing (permission errors are ignored).
                raise FileNotFoundError(f"no such folder: {self.root}")
            async for changes in awatch(
                self.root,
                watch_filter=None,
                debounce=self._debounce,
                step=self._step,
                stop_event=stop,
                force_polling=self._force_polling,
                ignore_permission_denied=True,
            ):
                self.mark_stale(path for _change, path in changes)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = exc
            log.warning("read-state watcher on %s stopped: %s", self.root, exc)

    def mark_stale(self, paths: Any) -> int:
        """Flag the records of `paths`; returns how many were flagged."""
        files = self.state.get(READ_FILES)
        if not files:
            return 0
        by_real: dict[str, dict[str, Any]] | None = None
        count = 0
        for path in paths:
            key = state_key(path)
            entry = files.get(key)
            if entry is None:
                if by_real is None:
                    by_real = {e["real"]: e for e in files.values() if e.get("real")}
                entry = by_real.get(key)
            if entry is not None:
                entry["stale"] = True
                count += 1
        return count
