"""The read-state cache behind Edit/Write's "read it first" rule, and its watchfiles watcher."""

from __future__ import annotations

import asyncio
import os

from agent_tui.tools.file_state import (
    MODIFIED_MESSAGE,
    NOT_READ_MESSAGE,
    ReadStateWatcher,
    check_writable,
    lookup,
    record_read,
    record_write,
)


def read(state: dict, path) -> None:
    record_read(state, path, path.read_bytes(), partial=False)


def test_unread_file_is_refused(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    assert check_writable({}, f) == "File has not been read yet. Read it first before writing to it."
    assert NOT_READ_MESSAGE == "File has not been read yet. Read it first before writing to it."


def test_read_unchanged_file_is_writable(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    state: dict = {}
    read(state, f)
    assert check_writable(state, f) is None


def test_record_has_mtime_partial_and_hash(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    state: dict = {}
    record_read(state, f, "x\n", partial=True)
    entry = state["read_files"][str(f)]
    assert entry["mtime"] == os.stat(f).st_mtime
    assert entry["partial"] is True
    assert len(entry["sha256"]) == 64


def test_changed_file_is_refused_with_claude_code_message(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    state: dict = {}
    read(state, f)
    f.write_text("changed by a linter\n")
    os.utime(f, (1_000_000, 1_000_000))
    assert check_writable(state, f) == (
        "File has been modified since read, either by the user or by a linter. "
        "Read it again before attempting to write it."
    )
    assert check_writable(state, f) == MODIFIED_MESSAGE


def test_touched_but_unchanged_file_is_writable(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("same\n")
    state: dict = {}
    read(state, f)
    os.utime(f, (2_000_000, 2_000_000))
    assert check_writable(state, f) is None
    assert state["read_files"][str(f)]["mtime"] == 2_000_000


def test_hash_of_lf_text_matches_crlf_file(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    state: dict = {}
    record_read(state, f, "one\ntwo\n", partial=False)
    os.utime(f, (3_000_000, 3_000_000))
    assert check_writable(state, f) is None


def test_stale_entry_with_new_content_but_same_mtime_is_refused(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    state: dict = {}
    read(state, f)
    mtime = os.stat(f).st_mtime_ns
    f.write_text("two\n")
    os.utime(f, ns=(mtime, mtime))
    assert check_writable(state, f) is None  # mtime alone cannot tell
    ReadStateWatcher(state, tmp_path).mark_stale([str(f)])
    assert check_writable(state, f) == MODIFIED_MESSAGE


def test_stale_entry_with_same_content_is_writable_and_cleared(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    state: dict = {}
    read(state, f)
    ReadStateWatcher(state, tmp_path).mark_stale([str(f)])
    assert state["read_files"][str(f)]["stale"] is True
    assert check_writable(state, f) is None
    assert state["read_files"][str(f)]["stale"] is False


def test_record_write_allows_the_next_write_without_reread(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    state: dict = {}
    read(state, f)
    f.write_text("two, written by a tool\n")
    os.utime(f, (4_000_000, 4_000_000))
    record_write(state, f, "two, written by a tool\n")
    assert check_writable(state, f) is None
    assert state["read_files"][str(f)]["partial"] is False


def test_file_read_through_symlink_is_found_by_real_path(tmp_path):
    f = tmp_path / "real.txt"
    f.write_text("x\n")
    link = tmp_path / "link.txt"
    link.symlink_to(f)
    state: dict = {}
    read(state, link)
    assert lookup(state, f) is state["read_files"][str(link)]
    assert check_writable(state, f) is None


def test_deleted_file_may_be_written_again(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    state: dict = {}
    read(state, f)
    f.unlink()
    assert check_writable(state, f) is None


def test_mark_stale_ignores_files_not_read(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    state: dict = {}
    read(state, f)
    watcher = ReadStateWatcher(state, tmp_path)
    assert watcher.mark_stale([str(tmp_path / "other.txt")]) == 0
    assert state["read_files"][str(f)]["stale"] is False


async def wait_until(predicate, timeout: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


async def test_watcher_marks_changed_file_stale(tmp_path):
    f = tmp_path / "sub" / "a.txt"
    f.parent.mkdir()
    f.write_text("one\n")
    state: dict = {}
    read(state, f)
    async with ReadStateWatcher(state, tmp_path, debounce_ms=200, step_ms=20) as watcher:
        assert watcher.running
        await asyncio.sleep(0.1)
        f.write_text("two\n")
        assert await wait_until(lambda: state["read_files"][str(f)]["stale"])
    assert not watcher.running
    assert check_writable(state, f) == MODIFIED_MESSAGE


async def test_watcher_stop_ends_its_task(tmp_path):
    watcher = ReadStateWatcher({}, tmp_path, step_ms=20)
    await watcher.start()
    assert watcher.running
    await watcher.stop()
    assert not watcher.running
    assert watcher.error is None


async def test_watcher_on_missing_root_fails_quietly(tmp_path):
    watcher = ReadStateWatcher({}, tmp_path / "missing", step_ms=20)
    await watcher.start()
    assert await wait_until(lambda: not watcher.running)
    assert watcher.error is not None
    await watcher.stop()


def test_record_read_without_content_hashes_the_file_on_disk(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    state: dict = {}
    record_read(state, f, None, True, mtime=f.stat().st_mtime)
    os.utime(f, (5_000_000, 5_000_000))
    assert check_writable(state, f) is None  # touched only: the hash vouches for it
    f.write_text("two\n")
    os.utime(f, (6_000_000, 6_000_000))
    assert check_writable(state, f) == MODIFIED_MESSAGE


def test_record_read_without_content_skips_hash_if_file_moved_on(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    state: dict = {}
    record_read(state, f, None, False, mtime=123.0)  # the read saw an older version
    assert state["read_files"][str(f)]["sha256"] is None
    assert check_writable(state, f) == MODIFIED_MESSAGE
