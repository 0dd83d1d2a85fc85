"""The transcript store: a session as JSON lines, and everything needed to resume it.

A session lives in `<data dir>/projects/<slug of cwd>/<session id>.jsonl`
(`AGENT_TUI_DATA_DIR` overrides the data dir); large tool outputs and other
artefacts go in the folder `<session id>/` beside it.  Records, one per line,
`"type"` first:

    session   the header: id, cwd, creation time, format version
    message   one history message, in order
    truncate  the history was rewritten (compaction, repair): keep the first
              `keep` messages; the `message` records after it continue from there
    replace   one earlier message changed in place (`at`, its index; `message`): old tool
              results cleared or shortened, thinking signatures stripped.  Only the changed
              messages are written, not everything after the first of them (a 500-turn
              history's results cleared once would otherwise be written whole again)
    event     a notable bus event (`Event.to_dict()`; no text deltas)

Durability: a record is one unbuffered write, so it is in the operating
system's hands (and survives the process being killed) as soon as the call
returns; the file is fsynced at the end of each model turn.  A crash in the
middle of a write leaves a torn last line: loading skips it and the next
append cuts it off.

Loading repairs what a crash can leave behind (`repair_history`) so that the
history sent after a resume is valid, and `replay_events` turns a transcript
back into bus events for a front end to redraw it.
"""

from __future__ import annotations

import json
import os

try:
    import fcntl
except ImportError:  # not POSIX: sessions go unlocked
    fcntl = None  # type: ignore[assignment]
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import sha1
from pathlib import Path
from typing import Any

from ..paths import data_dir
from . import events as ev
from .memo import common_prefix
from .messages import (
    INTERRUPTED_FOR_TOOL_USE,
    INTERRUPTED_MESSAGE,
    Message,
    blocks,
    check_history,
    ensure_tool_result_pairing,
    text_block,
    tool_result_block,
    tool_uses,
    user_message,
    valid_utf8,
)

FORMAT_VERSION = 1
# Results given to tool calls that were running when the process died.
SESSION_ENDED_RESULT = (
    "[Tool result missing: agent-tui stopped before this tool call finished; it may or may not have run]"
)
# Appended to a trailing user message whose turn never finished.
SESSION_ENDED_MESSAGE = "[agent-tui stopped before the assistant answered; the conversation has been resumed]"

# Events worth keeping: enough to redraw the transcript, nothing per-token.
_NOTABLE: frozenset[type[ev.Event]] = frozenset({
    ev.SessionStarted,
    ev.UserMessage,
    ev.ToolQueued,
    ev.ToolFinished,
    ev.PermissionResolved,
    ev.Usage,
    ev.Notice,
    ev.Compaction,
    ev.Interrupted,
    ev.QueryFinished,
})
# Records start with these bytes (keys in this order), so listing need not parse every line.
_USER_MESSAGE_PREFIX = b'{"type":"event","event":{"type":"user_message"'
_HEADER_PREFIX = b'{"type":"session"'
_MESSAGE_PREFIX = b'{"type":"message","message":{'


class SessionNotFound(LookupError):
    """No stored session matches (the message says what was looked for)."""


# ---------------------------------------------------------------- locations




def project_slug(cwd: Path) -> str:
    """`/home/ann/src/app` -> `-home-ann-src-app` (long paths keep a hash of the whole)."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    if len(slug) > 120:
        slug = slug[:100] + "-" + sha1(str(cwd).encode()).hexdigest()[:12]
    return slug


def project_dir(cwd: Path) -> Path:
    return data_dir() / "projects" / project_slug(Path(cwd).resolve())


def _dumps(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    return (valid_utf8(text) + "\n").encode("utf-8")


def _changed_in_place(old: list[Message], history: list[Message], start: int) -> list[int] | None:
    """Where `history` differs from `old` from `start` on, when it is `old` (and maybe more) with
    some messages changed in place, each keeping its role and its blocks' kinds; None when it is
    not (a compaction or a rewind)."""
    if len(history) < len(old):
        return None
    changed = [at for at in range(start, len(old)) if old[at] is not history[at] and old[at] != history[at]]
    for at in changed:
        before, after = old[at], history[at]
        if before.get("role") != after.get("role") or _kinds(before) != _kinds(after):
            return None
    return changed


def _kinds(message: Message) -> list[Any]:
    return [b.get("type") for b in blocks(message)]


# ---------------------------------------------------------------- writing


class TranscriptStore:
    """Appends one session's records.  The file appears with the first message.

    Write failures (disk full, permissions) never reach the loop: the first one
    is reported through `on_error` and persistence stops.
    """

    def __init__(self, cwd: Path, session_id: str, *, directory: Path | None = None) -> None:
        self.cwd = Path(cwd).resolve()
        self.session_id = session_id
        self.directory = directory or project_dir(self.cwd)
        self.path = self.directory / f"{session_id}.jsonl"
        self.on_error: Callable[[str], None] | None = None
        self._fd: int | None = None
        self._messages: list[Message] = []
        self._pending: list[bytes] = []
        self._unsynced = False
        self._failed = False
        self._lock_fd: int | None = None

    @property
    def lock_path(self) -> Path:
        return self.directory / f"{self.session_id}.lock"

    def lock(self) -> bool:
        """Take this session's exclusive lock, held until `close`; False when another
        process (or another store in this one) has it.  Two writers would interleave
        their records in one transcript."""
        if self._lock_fd is not None or fcntl is None:
            return True
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError:
            return True  # cannot lock (read-only folder): writing will report its own error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            os.close(fd)
            return True  # a filesystem without locks
        self._lock_fd = fd
        return True

    @property
    def assets_dir(self) -> Path:
        """The folder beside the transcript for this session's artefacts (saved outputs)."""
        return self.directory / self.session_id

    @property
    def messages(self) -> list[Message]:
        """The history as a loader would rebuild it from what has been written."""
        return list(self._messages)

    def for_session(self, session_id: str) -> TranscriptStore:
        """A store for another session of the same project (after /clear)."""
        store = TranscriptStore(self.cwd, session_id, directory=self.directory)
        store.on_error = self.on_error
        return store

    @classmethod
    def reopen(cls, transcript: Transcript, cwd: Path) -> TranscriptStore:
        """A store that appends to a loaded transcript's file."""
        store = cls(cwd, transcript.session_id, directory=transcript.path.parent)
        store._messages = list(transcript.messages)
        return store

    # -- records

    def append_message(self, message: Message) -> None:
        self._messages.append(message)
        self._write({"type": "message", "message": message, "ts": round(time.time(), 3)}, opens=True)

    def sync(self, history: list[Message], *, rewind: bool = False) -> None:
        """Make the stored history equal `history`: append what is new, and when
        earlier messages changed (compaction, repair) write a `truncate` first.

        `rewind`: the conversation went back to before a prompt (`/rewind`); a replay then
        leaves out what was shown of the prompts after it."""
        old = self._messages
        keep = common_prefix(old, history)  # the same objects: compared in C
        limit = min(len(old), len(history))
        while keep < limit and (old[keep] is history[keep] or old[keep] == history[keep]):
            keep += 1
        old[:keep] = history[:keep]  # equal messages become the same objects: the next sync compares in C
        changed = _changed_in_place(old, history, keep) if keep < len(old) and not rewind else None
        if changed is not None:
            old[keep:] = history[keep : len(old)]
            # One write for them all (hundreds of cleared results in a long history).
            self._write_bytes(b"".join(_dumps({"type": "replace", "at": at, "message": old[at]}) for at in changed))
            keep = len(old)
        if keep < len(old):
            del old[keep:]
            self._write({"type": "truncate", "keep": keep, **({"rewind": True} if rewind else {})}, opens=True)
        for message in history[keep:]:
            self.append_message(message)

    def record_event(self, event: ev.Event) -> None:
        """The bus listener: notable events of the main agent, in publish order."""
        if type(event) not in _NOTABLE or event.parent_tool_use_id is not None:
            return
        data = event.to_dict()
        if type(event) is ev.ToolQueued:
            data.pop("input", None)  # the tool_use block in the assistant message has it
        self._write({"type": "event", "event": data, "ts": round(time.time(), 3)}, opens=False)

    def commit(self) -> None:
        """fsync what was written (the end of a model turn)."""
        if self._fd is None or not self._unsynced or self._failed:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._fail(exc)
        self._unsynced = False

    def close(self) -> None:
        self.commit()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock; the file stays (unlinking it would race)
            self._lock_fd = None

    # -- file

    def _write(self, record: dict[str, Any], *, opens: bool) -> None:
        if self._failed:
            return
        self._write_bytes(_dumps(record), opens=opens)

    def _write_bytes(self, data: bytes, *, opens: bool = True) -> None:
        if self._failed:
            return
        if self._fd is None and not (opens or self.path.exists()):
            # Nothing worth a file yet (an idle session leaves no transcript).
            self._pending.append(data)
            return
        try:
            fd = self._fd if self._fd is not None else self._open()
            _write_all(fd, data)
        except OSError as exc:
            self._fail(exc)
            return
        self._unsynced = True

    def _open(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.lock()
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        try:
            if created:
                _fsync_dir(self.directory)
            else:
                _cut_torn_tail(fd)
            self._fd = fd
            head = b""
            if created or os.fstat(fd).st_size == 0:
                head = _dumps({
                    "type": "session",
                    "version": FORMAT_VERSION,
                    "session_id": self.session_id,
                    "cwd": str(self.cwd),
                    "created": datetime.now(UTC).isoformat(timespec="milliseconds"),
                })
            if head or self._pending:
                _write_all(fd, head + b"".join(self._pending))
                self._pending.clear()
        except OSError:
            os.close(fd)
            self._fd = None
            raise
        return fd

    def _fail(self, exc: OSError) -> None:
        self._failed = True
        if self.on_error is not None:
            self.on_error(f"Cannot save the transcript to {self.path}: {exc}. The session goes on unsaved.")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _cut_torn_tail(fd: int) -> None:
    """End the file on a whole line before appending: a last line without its newline
    is a torn write and is dropped, unless only the newline itself was lost."""
    size = os.fstat(fd).st_size
    if size == 0 or _read_at(fd, size - 1, 1) == b"\n":
        return
    start = size
    while start > 0:
        start = max(0, start - 65536)
        nl = _read_at(fd, start, size - start).rfind(b"\n")
        if nl >= 0:
            start += nl + 1
            break
    try:
        json.loads(_read_at(fd, start, size - start))
    except ValueError:
        os.ftruncate(fd, start)
    else:
        _write_all(fd, b"\n")


def _read_at(fd: int, offset: int, length: int) -> bytes:
    """Read without pread (not on Windows); appends ignore the offset (O_APPEND)."""
    os.lseek(fd, offset, os.SEEK_SET)
    chunks = []
    while length > 0:
        chunk = os.read(fd, length)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


# ---------------------------------------------------------------- reading


@dataclass
class Transcript:
    """A stored session, loaded."""

    session_id: str
    path: Path
    cwd: str
    created: str
    # The history exactly as stored, and repaired so that it can be sent.
    messages: list[Message]
    history: list[Message]
    # Every record in file order (what `replay_events` redraws from).
    records: list[dict[str, Any]]
    # False when the last prompt never reached its end (the process died mid-turn).
    finished: bool
    torn_tail: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return self.history != self.messages


# Where a line can hold a lone surrogate: a \uD800-\uDFFF escape, or its bytes as surrogatepass wrote
# them (ED A0-BF ..).  Other lines skip the walk over every string (most of a long session's load).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _may_hold_surrogate(data: bytes) -> bool:
    """`_MAYBE_SURROGATE` found in `data`; looked for only where one of its first bytes occurs
    (`bytes.find` runs at memory speed, the pattern's scan of a whole long session does not)."""
    starts = b"\\ud" in data or b"\\uD" in data or b"\xed" in data
    return starts and _MAYBE_SURROGATE.search(data) is not None


def _read_records(path: Path) -> tuple[list[dict[str, Any]], list[str], bool]:
    """The file's records, the problems of the lines skipped, and whether its last line is torn.

    A file of valid lines (nearly all) is parsed in one call, as a JSON array of its lines:
    a long session's thousands of lines cost one parse, not thousands."""
    data = path.read_bytes()
    raw_lines = data.split(b"\n")
    if not _may_hold_surrogate(data):
        lines = [raw for raw in raw_lines if raw.strip()]
        try:
            whole = json.loads(b"[" + b",".join(lines) + b"]")
        except ValueError:
            pass
        else:
            if len(whole) == len(lines) and all(type(r) is dict for r in whole):
                return whole, [], False
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    torn = False
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8", "surrogatepass"))
            if _MAYBE_SURROGATE.search(raw):
                # Older transcripts stored lone surrogates (surrogatepass): they load as U+FFFD.
                record = valid_utf8(record)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except ValueError:
            if number == len(raw_lines):
                torn = True  # no newline after it: the write never finished
            else:
                problems.append(f"{path.name} line {number}: not a valid record, skipped")
            continue
        records.append(record)
    return records, problems, torn


def load_transcript(path: Path) -> Transcript:
    """Read a transcript; a torn last line is skipped, other bad lines are reported."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    messages: list[Message] = []
    last_message = last_finished = -1
    parsed, problems, torn = _read_records(path)
    for record in parsed:
        kind = record.get("type")
        if kind == "session" and not header:
            header = record
        elif kind == "message" and isinstance(record.get("message"), dict):
            messages.append(record["message"])
            last_message = len(records)
        elif kind == "truncate":
            del messages[int(record.get("keep", 0)) :]
            last_message = len(records)
        elif kind == "replace" and isinstance(record.get("message"), dict):
            at = record.get("at")
            if isinstance(at, int) and 0 <= at < len(messages):
                messages[at] = record["message"]
            last_message = len(records)
        elif kind == "event" and isinstance(record.get("event"), dict):
            if record["event"].get("type") == "query_finished":
                last_finished = len(records)
        records.append(record)
    finished = last_message < 0 or last_finished > last_message
    return Transcript(
        session_id=str(header.get("session_id") or path.stem),
        path=path,
        cwd=str(header.get("cwd", "")),
        created=str(header.get("created", "")),
        messages=messages,
        history=repair_history(messages, finished=finished),
        records=records,
        finished=finished,
        torn_tail=torn,
        problems=problems,
    )


def repair_history(messages: list[Message], *, finished: bool) -> list[Message]:
    """The history a resumed session sends.

    A turn that never finished (the process died) may end on an assistant
    message whose tool calls have no results: they get `SESSION_ENDED_RESULT`
    errors.  A trailing user message of such a turn (the prompt, or tool results
    the model never saw) keeps its content and gains `SESSION_ENDED_MESSAGE`, so
    the model knows why the next prompt follows it.  Anything else that breaks
    the invariants is repaired by `ensure_tool_result_pairing`.
    """
    history = [dict(m) for m in messages]
    if history and not finished:
        last = history[-1]
        if last["role"] == "assistant" and tool_uses(last):
            results = [tool_result_block(b["id"], SESSION_ENDED_RESULT, is_error=True) for b in tool_uses(last)]
            history.append(user_message(results))
        last = history[-1]
        if last["role"] == "user" and blocks(last)[-1:] != [text_block(SESSION_ENDED_MESSAGE)]:
            history[-1] = {"role": "user", "content": blocks(last) + [text_block(SESSION_ENDED_MESSAGE)]}
    if check_history(history):
        history = ensure_tool_result_pairing(history)
    return history


# ---------------------------------------------------------------- listing


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One stored session, for pickers (`--resume`, `/resume`)."""

    session_id: str
    path: Path
    created: datetime
    modified: datetime
    # The first prompt's text (first line, at most 200 characters).
    first_prompt: str
    # Prompts the user submitted.
    turn_count: int
    # Whether any assistant message was stored.
    answered: bool = True


def list_sessions(cwd: Path) -> list[SessionInfo]:
    """The sessions stored for `cwd` that got an answer, most recently used first (a
    run that failed before any reply, such as a print run with no server, is not
    worth offering)."""
    return [info for info in sessions_in(project_dir(cwd)) if info.answered]


def sessions_in(directory: Path) -> list[SessionInfo]:
    try:
        paths = [p for p in directory.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return []
    infos = []
    for path in paths:
        info = _scan(path)
        if info is not None:
            infos.append(info)
    # the file's mtime ticks coarsely (a few ms): two sessions written in one tick go by creation time
    infos.sort(key=lambda i: (i.modified, i.created), reverse=True)
    return infos


def _latest(directory: Path) -> Path:
    """The newest transcript, as `sessions_in` orders them, reading only the files written last
    (`-c` would otherwise read every stored session of the project whole)."""
    newest: list[Path] = []
    latest = -1.0
    try:
        for path in directory.iterdir():
            if path.suffix != ".jsonl" or not path.is_file():
                continue
            mtime = path.stat().st_mtime
            if mtime > latest:
                newest, latest = [path], mtime
            elif mtime == latest:
                newest.append(path)
    except OSError:
        newest = []
    if len(newest) == 1:
        return newest[0]
    infos = [info for info in map(_scan, newest) if info is not None]
    if not infos:
        raise SessionNotFound("no stored conversation for this directory")
    return max(infos, key=lambda i: (i.modified, i.created)).path


def _scan(path: Path) -> SessionInfo | None:
    """Header, first prompt and prompt count, without parsing every record."""
    try:
        stat = path.stat()
        data = path.read_bytes()
    except OSError:
        return None
    session_id = path.stem
    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
    created = modified
    first_prompt = ""
    count = 0
    answered = False
    for line in data.split(b"\n"):
        if not answered and line.startswith(_MESSAGE_PREFIX) and b'"role":"assistant"' in line[:64]:
            answered = True
        elif line.startswith(_USER_MESSAGE_PREFIX):
            count += 1
            if count == 1:
                try:
                    first_prompt = json.loads(line)["event"].get("text", "")
                except (ValueError, KeyError):
                    first_prompt = ""
        elif line.startswith(_HEADER_PREFIX):
            try:
                header = json.loads(line)
                session_id = header.get("session_id") or session_id
                created = datetime.fromisoformat(header["created"])
            except (ValueError, KeyError, TypeError):
                pass
    lines = first_prompt.strip().splitlines()
    return SessionInfo(
        session_id=session_id,
        path=path,
        created=created,
        modified=modified,
        first_prompt=(lines[0] if lines else "")[:200],
        turn_count=count,
        answered=answered,
    )


def find_session(directory: Path, session_id: str | None = None) -> Path:
    """The transcript of `session_id` (a unique prefix is enough), or the latest one."""
    if session_id is None:
        return _latest(directory)
    sessions = sessions_in(directory)
    exact = [s for s in sessions if s.session_id == session_id]
    matches = exact or [s for s in sessions if s.session_id.startswith(session_id)]
    if len(matches) == 1:
        return matches[0].path
    if not matches:
        raise SessionNotFound(f"no stored session {session_id!r} for this directory")
    raise SessionNotFound(f"session id {session_id!r} is ambiguous ({len(matches)} sessions start with it)")


# ---------------------------------------------------------------- replay


def tail_start(transcript: Transcript, prompts: int) -> int:
    """Where in `transcript.records` the last `prompts` prompts begin (their `user_message`
    events), when a replay of the records from there gives the events a whole replay gives from
    there: no record rewrote the history (`truncate`).  0 when there are no more prompts than
    that, or when the history was rewritten."""
    starts: list[int] = []
    for n, record in enumerate(transcript.records):
        kind = record.get("type")
        if kind == "truncate":
            return 0
        if kind == "event" and (record.get("event") or {}).get("type") == "user_message":
            starts.append(n)
    return starts[-prompts] if len(starts) > prompts else 0


Stored = dict[str, dict[str, Any]]


def _stored_tool_events(records: list[dict[str, Any]]) -> tuple[Stored, Stored, Stored, str]:
    """Each tool call's `tool_queued`, `tool_finished` and `permission_resolved` events, by its
    id, and the model the session started with."""
    queued: Stored = {}
    finished: Stored = {}
    permissions: Stored = {}
    model = ""
    for record in records:
        event = record.get("event") if record.get("type") == "event" else None
        if not isinstance(event, dict):
            continue
        kind, tid = event.get("type"), event.get("tool_use_id")
        if kind == "tool_queued":
            queued[tid] = event
        elif kind == "tool_finished":
            finished[tid] = event
        elif kind == "permission_resolved":
            permissions[tid] = event
        elif kind == "session_started" and not model:
            model = event.get("model", "")
    return queued, finished, permissions, model


def replay_events(transcript: Transcript, *, since: int = 0, until: int | None = None) -> list[ev.Event]:
    """The transcript as bus events, for a front end to redraw it as it was.

    Prompts come back as `user_message`, answers as one `text_delta` plus
    `block_completed` per block, each tool call as `tool_queued`,
    `tool_started`, `permission_resolved` (when there was one) and
    `tool_finished` with its stored data (diffs, outputs); interrupt markers as
    `interrupted`, then notices, usage, compaction and `query_finished` where
    they happened.  Each model turn starts with `request_started`.

    `since`, `until`: the events of those records only (a resumed session's last screen first:
    `tail_start` says where a replay may begin); the tool calls' stored events are found in all.
    """
    records = transcript.records
    queued, finished, permissions, model = _stored_tool_events(records)
    results = {
        b.get("tool_use_id"): b
        for m in transcript.history
        if m["role"] == "user"
        for b in blocks(m)
        if b.get("type") == "tool_result"
    }

    out: list[ev.Event] = []
    current: list[Message] = []
    before_truncate: list[Message] = []
    # Where each prompt's events began in `out`, by the number of messages before it (rewinds cut there).
    prompt_starts: dict[int, int] = {}
    turn = 0
    for record in records[since:until]:
        kind = record.get("type")
        if kind == "truncate":
            keep = int(record.get("keep", 0))
            if record.get("rewind"):
                del out[prompt_starts.get(keep, len(out)) :]
                prompt_starts = {n: at for n, at in prompt_starts.items() if n < keep}
                del current[keep:]
                continue
            before_truncate = list(current)
            del current[keep:]
            prompt_starts = {n: at for n, at in prompt_starts.items() if n <= keep}
        elif kind == "replace":
            at = record.get("at")
            if isinstance(at, int) and 0 <= at < len(current):
                current[at] = record.get("message") or {}  # (shown already, as it was then)
        elif kind == "message":
            message = record.get("message") or {}
            position = len(current)
            current.append(message)
            if position < len(before_truncate) and before_truncate[position] == message:
                continue  # rewritten unchanged: already shown
            if message.get("role") == "assistant":
                turn += 1
                out.append(ev.RequestStarted(turn=turn, model=model, max_tokens=0))
                out.extend(_replay_assistant(message, queued, finished, permissions, results))
            else:
                out.extend(_replay_markers(message))
        elif kind == "event":
            data = record.get("event") or {}
            event = _event_from(data)
            if event is not None:
                out.append(event)
            if data.get("type") == "user_message":
                turn = 0
                prompt_starts[len(current)] = len(out) - (event is not None)
    return out


def _replay_assistant(
    message: Message,
    queued: dict[str, dict[str, Any]],
    finished: dict[str, dict[str, Any]],
    permissions: dict[str, dict[str, Any]],
    results: dict[str, dict[str, Any]],
) -> Iterable[ev.Event]:
    for index, block in enumerate(blocks(message)):
        btype = block.get("type")
        if btype == "text":
            yield ev.TextDelta(index=index, text=block.get("text", ""))
        elif btype == "thinking":
            yield ev.ThinkingDelta(index=index, text=block.get("thinking", ""))
        public = {k: v for k, v in block.items() if not k.startswith("_")}
        yield ev.BlockCompleted(index=index, block=public)
        if btype != "tool_use":
            continue
        tid = block.get("id", "")
        name = block.get("name", "")
        q = queued.get(tid, {})
        yield ev.ToolQueued(
            tool_use_id=tid,
            name=name,
            input=block.get("input") or {},
            summary=q.get("summary", name),
            concurrency_safe=bool(q.get("concurrency_safe", False)),
        )
        yield ev.ToolStarted(tool_use_id=tid, name=name)
        p = permissions.get(tid)
        if p is not None:
            yield ev.PermissionResolved(
                tool_use_id=tid,
                tool_name=p.get("tool_name", name),
                behavior=p.get("behavior", "deny"),
                remember=bool(p.get("remember", False)),
                rule=p.get("rule"),
                feedback=p.get("feedback"),
            )
        f = finished.get(tid)
        if f is not None:
            yield ev.ToolFinished(
                tool_use_id=tid,
                name=name,
                is_error=bool(f.get("is_error", False)),
                preview=f.get("preview", ""),
                duration=float(f.get("duration", 0.0)),
                status=f.get("status", "done"),
                data=f.get("data") or {},
            )
        else:
            result = results.get(tid, {})
            content = result.get("content", "")
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content if isinstance(b, dict)
            )
            is_error = bool(result.get("is_error", False))
            yield ev.ToolFinished(
                tool_use_id=tid,
                name=name,
                is_error=is_error,
                preview=text[:300],
                duration=0.0,
                status="error" if is_error else "done",
            )


def _replay_markers(message: Message) -> Iterable[ev.Event]:
    for block in blocks(message):
        if block.get("type") != "text":
            continue
        if block.get("text") == INTERRUPTED_MESSAGE:
            yield ev.Interrupted(during="streaming")
        elif block.get("text") == INTERRUPTED_FOR_TOOL_USE:
            yield ev.Interrupted(during="tools")


_REPLAYED_EVENTS: dict[str, type[ev.Event]] = {
    cls.type: cls for cls in (ev.UserMessage, ev.Usage, ev.Notice, ev.Compaction, ev.QueryFinished)
}


def _event_from(data: dict[str, Any]) -> ev.Event | None:
    cls = _REPLAYED_EVENTS.get(data.get("type", ""))
    if cls is None:
        return None
    fields = {k: v for k, v in data.items() if k != "type"}
    try:
        return cls(**fields)
    except TypeError:
        return None  # written by a version with other fields
