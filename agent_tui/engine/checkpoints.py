"""Checkpoints: every prompt starts one, and `/rewind` goes back to just before a prompt.

A checkpoint is a commit in a shadow git repository outside the project (under agent-tui's
data folder, one per working directory), made with git's own object store over the working
tree: every file change counts, Bash's included, what `.gitignore` ignores is left out, and so
is any file over `max_file_bytes`.  The project's own `.git` is never read or written: git runs
with `--git-dir` pointing at the shadow repository and its own index.

Each checkpoint also records how long the conversation was and a digest of it, so the
conversation can go back too, and a second commit when the prompt ended: a difference between
one prompt's end and the next one's start (or now) is a change made outside agent-tui, and a
restore that would overwrite one is reported first so the front end can ask.  The list is kept
per session beside the shadow repository, so it survives `-c` / `-r`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import events as ev
from .memo import common_prefix
from .store import data_dir, project_slug

# Files larger than this are left out of checkpoints (and so never restored nor deleted).
MAX_FILE_BYTES = 10 * 1024 * 1024
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "agent-tui", "GIT_AUTHOR_EMAIL": "checkpoints@agent-tui.invalid",
    "GIT_COMMITTER_NAME": "agent-tui", "GIT_COMMITTER_EMAIL": "checkpoints@agent-tui.invalid",
    "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
}
# Characters gitignore patterns treat specially: escaped in the exclude list of large files.
_GLOB_SPECIAL = "\\*?[]!# "


class CheckpointError(RuntimeError):
    """Git failed, or is not installed."""


@dataclass(slots=True)
class Checkpoint:
    """The files and conversation just before prompt `index` (1-based) of the session."""

    index: int
    prompt: str
    commit: str
    history_len: int
    history_digest: str
    created: float
    # The files when the prompt ended (None while it runs, or when it never ended).
    after: str | None = None
    # The prompt's uuid (`user_message`): how a program names it (`rewind_files`).
    uuid: str | None = None
    # Checkpoints made before `history_digest` was the shape's: the digest of the conversation's
    # shape as `whole_dump_digest` made it (None in older ones still, which had only the exact one).
    history_shape: str | None = None


def history_digest(history: list[Any]) -> str:
    """The digest of `history` a checkpoint stores: of its shape (`message_shape`), so that it still
    matches once old tool results were cleared; sha256 over each message's own sha256, so that a
    message replaced in the middle (a result cleared) costs only its own hash."""
    return HistoryDigest()(history)


def whole_dump_digest(history: list[Any]) -> str:
    """The digest older checkpoints stored: sha256 of the history's JSON (a checkpoint's
    `history_digest` without `DIGEST_KIND`; its `history_shape`, of the shapes)."""
    return hashlib.sha256(json.dumps(history, sort_keys=True, default=str).encode()).hexdigest()


# What starts a digest of `history_digest`'s kind.
DIGEST_KIND = "m1:"


def message_shape(message: Any) -> Any:
    """`message` without what clearing old context changes in place (docs/architecture.md §3):
    a tool result's content (cleared or shortened) and a thinking block's text and signature.
    What was said and which tools were called stay."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    blocks = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            blocks.append({"type": kind, "tool_use_id": block.get("tool_use_id")})
        elif kind in ("thinking", "redacted_thinking"):
            blocks.append({"type": kind})
        else:
            blocks.append(block)
    return {**message, "content": blocks}


def matches(checkpoint: Checkpoint, history: list[Any]) -> bool:
    """Whether the conversation before `checkpoint`'s prompt is `history` (old tool results
    cleared since aside), by the digest it stored, of either kind."""
    digest = checkpoint.history_digest
    if digest.startswith(DIGEST_KIND):
        return history_digest(history) == digest
    if whole_dump_digest(history) == digest:
        return True
    shape = checkpoint.history_shape
    return shape is not None and whole_dump_digest([message_shape(m) for m in history]) == shape


class HistoryDigest:
    """`history_digest(history)` at the cost of the messages new since the last call.  Each
    message's hash is kept while the message is in the history (complete messages are never
    changed, docs/architecture.md §3: the same object is the same message), and the chained state
    after each one: the prefix a history shares with the last one (the same objects) is not gone
    over again, and after a message replaced in the middle only the replacement is hashed anew."""

    def __init__(self, shape: Callable[[Any], Any] = message_shape) -> None:
        # What is hashed of each message.
        self._shape = shape
        self._items: list[Any] = []
        self._states = [hashlib.sha256(DIGEST_KIND.encode())]
        # id(message) -> (message, its hash): the message is held so that its id stays its own.
        self._hashes: dict[int, tuple[Any, bytes]] = {}
        # A worker thread may hash a history ahead (`Checkpoints.digest_ahead`) as a prompt begins.
        self._lock = threading.Lock()

    def __call__(self, history: list[Any]) -> str:
        with self._lock:
            return self._digest(history)

    def _digest(self, history: list[Any]) -> str:
        kept = common_prefix(self._items, history)
        states = self._states[: kept + 1]
        hashes = self._hashes
        for message in history[kept:]:
            known = hashes.get(id(message))
            if known is None or known[0] is not message:
                known = hashes[id(message)] = (message, hashlib.sha256(
                    json.dumps(self._shape(message), sort_keys=True, default=str).encode()).digest())
            state = states[-1].copy()
            state.update(known[1])
            states.append(state)
        if kept < len(self._items):  # messages left the history: their hashes go
            self._hashes = {id(m): hashes[id(m)] for m in history}
        self._items, self._states = list(history), states
        return DIGEST_KIND + states[-1].hexdigest()


class Checkpoints:
    def __init__(self, cwd: Path, session_id: str, *, root: Path | None = None,
                 max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.cwd = Path(cwd).resolve()
        self._session_id = session_id
        # The session's id now (after /clear or a resume it is another session's list).
        self.current_id: Any = None
        self.git_dir = (root or data_dir() / "checkpoints") / project_slug(self.cwd)
        self.max_file_bytes = max_file_bytes
        self._list: list[Checkpoint] | None = None
        self._digest = HistoryDigest()
        self.problem: str | None = None
        # Snapshots asked for by the prompts run here, in order, off the caller's thread (`later`);
        # the newest one's future says when all are taken.
        self._worker: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None
        self._worker_thread: int | None = None
        # The list and its file, changed by the caller's thread and the snapshots' alike.
        self._guard = threading.RLock()
        # Told when a snapshot in the thread fails (the front end says checkpoints are off).
        self.on_problem: Callable[[str], None] | None = None
        # Files over the size cap last time: checked again each time (they may have shrunk).
        self._large_before: list[str] = []

    @property
    def session_id(self) -> str:
        current = self.current_id() if self.current_id is not None else self._session_id
        if current != self._session_id:
            self._session_id, self._list = current, None
        return current

    # ------------------------------------------------------------ wiring

    @classmethod
    def attach(cls, session: Any) -> Checkpoints | None:
        """Checkpoints for `session`, taken as each prompt starts and ends (None without git, and in
        the home folder or at the root of the file system)."""
        if shutil.which("git") is None:
            return None
        cwd = Path(session.cwd).resolve()
        if cwd == Path(cwd.anchor) or cwd == Path(os.path.expanduser("~")).resolve():
            return None  # the whole disk or home folder is no project to snapshot at every prompt
        checkpoints = cls(session.cwd, session.session_id)
        checkpoints.current_id = lambda: session.session_id

        def on_event(event: ev.Event) -> None:
            # On the event loop: the snapshots themselves run in the checkpoints' thread (`later`),
            # and a tool waits for them before it runs (`Session.files_checkpointed`).
            if event.parent_tool_use_id is not None:
                return
            if isinstance(event, ev.UserMessage) and not event.notification:
                checkpoints.later(checkpoints.take_before, checkpoints.open(event.text, session.history,
                                                                            event.uuid or None))
            elif isinstance(event, ev.QueryFinished):
                checkpoints.later(checkpoints.end)

        def on_problem(message: str) -> None:
            session.bus.publish(ev.Notice(kind="warning", message=f"Checkpoints are off: {message}"))

        checkpoints.on_problem = on_problem
        session.bus.add_listener(on_event)
        threading.Thread(target=checkpoints.warm, name="checkpoints-warm-up", daemon=True).start()
        return checkpoints

    # ------------------------------------------------------------ the list

    @property
    def _list_path(self) -> Path:
        return self.git_dir / "sessions" / f"{self.session_id}.json"

    def list(self) -> list[Checkpoint]:
        """The session's checkpoints, once the snapshots asked for so far are taken."""
        self.settle()
        return self._loaded()

    def _loaded(self) -> list[Checkpoint]:
        with self._guard:
            if self._list is None:
                try:
                    rows = json.loads(self._list_path.read_text())
                    self._list = [Checkpoint(**row) for row in rows]
                except (OSError, ValueError, TypeError):
                    self._list = []
            return self._list

    def _save(self) -> None:
        with self._guard:
            self._list_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._list_path.with_suffix(".tmp")
            tmp.write_text(json.dumps([asdict(c) for c in self._loaded()]))
            os.replace(tmp, self._list_path)

    # ------------------------------------------------------------ the snapshots' thread

    def later(self, job: Callable[..., Any], *args: Any) -> None:
        """Run `job(*args)` in the checkpoints' own thread, after the jobs asked for before it.  A
        snapshot walks the whole working tree (a second or so in a 50,000-file project), which the
        event loop's thread must not wait for (docs/architecture.md §3); a failure turns
        checkpoints off, as one in the caller's thread would."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoints")
        try:  # where a failure is told: the caller's event loop, if it runs one
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self._last = self._worker.submit(self._run_job, job, args, loop)

    def _run_job(self, job: Callable[..., Any], args: tuple[Any, ...], loop: asyncio.AbstractEventLoop | None) -> None:
        self._worker_thread = threading.get_ident()
        try:
            job(*args)
        except Exception as exc:  # git failed, or a bug: checkpoints go off; the prompt's tools still run
            if self.problem is None and self.on_problem is not None:
                if loop is None:
                    self.on_problem(str(exc))
                else:
                    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                        loop.call_soon_threadsafe(self.on_problem, str(exc))
            self.problem = str(exc)

    def close(self) -> None:
        """Let the snapshots' thread go once the jobs asked for are done (a later job starts another)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False)

    @property
    def pending(self) -> bool:
        """Whether a snapshot asked for is not taken yet."""
        return self._last is not None and not self._last.done()

    def settle(self) -> None:
        """Wait until the snapshots asked for so far are taken (not from their own thread)."""
        last = self._last
        if last is not None and threading.get_ident() != self._worker_thread:
            last.result()

    def digest_ahead(self, history: list[Any]) -> None:
        """Hash `history` now, in a worker thread, so that the next prompt's checkpoint (which
        digests the history it starts from on the event loop's thread) hashes only what is new
        (a resumed session's whole history; one whose old results were cleared)."""
        self._digest(history)

    def begin(self, prompt: str, history: list[Any], uuid: str | None = None) -> Checkpoint:
        """The checkpoint of a prompt about to run: the files now, the conversation before it."""
        self.settle()
        checkpoint = self.open(prompt, history, uuid)
        self.take_before(checkpoint)
        return checkpoint

    def open(self, prompt: str, history: list[Any], uuid: str | None = None) -> Checkpoint:
        """A prompt's checkpoint in the list: the conversation before it, which is as it is only
        now; its files' commit follows (`take_before`)."""
        with self._guard:
            checkpoints = self._loaded()
            checkpoint = Checkpoint(len(checkpoints) + 1, prompt, "", len(history), self._digest(history),
                                    time.time(), uuid=uuid)
            checkpoints.append(checkpoint)
        return checkpoint

    def take_before(self, checkpoint: Checkpoint) -> None:
        """The files before `checkpoint`'s prompt; without them it leaves the list."""
        try:
            commit = self.snapshot(f"before prompt {checkpoint.index}")
        except BaseException:
            with self._guard:
                if checkpoint in self._loaded():
                    self._loaded().remove(checkpoint)
            raise
        with self._guard:
            checkpoint.commit = commit
            self._save()

    def end(self) -> None:
        """The prompt ended: what the files are now is agent-tui's doing."""
        with self._guard:
            checkpoints = self._loaded()
            last = checkpoints[-1] if checkpoints and checkpoints[-1].after is None else None
        if last is not None:
            after = self.snapshot(f"after prompt {last.index}")
            with self._guard:
                last.after = after
                self._save()

    def find(self, uuid: str) -> Checkpoint | None:
        """The checkpoint of the prompt whose uuid is `uuid`."""
        return next((c for c in self.list() if c.uuid == uuid), None)

    # ------------------------------------------------------------ restoring

    def diff_stats(self, checkpoint: Checkpoint) -> tuple[list[str], int, int]:
        """What a restore of `checkpoint` would do: the paths it writes or deletes, and the lines
        it adds and removes (a `rewind_files` dry run)."""
        now = self.snapshot("now")
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--numstat", now, checkpoint.commit)
        files: list[str] = []
        insertions = deletions = 0
        for entry in filter(None, out.split("\0")):
            added, removed, path = entry.split("\t", 2)
            files.append(path)
            insertions += int(added) if added.isdigit() else 0
            deletions += int(removed) if removed.isdigit() else 0
        return files, insertions, deletions

    def changes(self, checkpoint: Checkpoint) -> list[str]:
        """The paths a restore of `checkpoint` would write or delete."""
        now = self.snapshot("now")
        return [path for _, path in self._diff(now, checkpoint.commit)]

    def changed_outside(self, checkpoint: Checkpoint) -> list[str]:
        """Paths a restore of `checkpoint` would overwrite that changed outside agent-tui since it:
        between one prompt's end and the next one's start, or since the last prompt ended."""
        later = [c for c in self.list() if c.index >= checkpoint.index]
        now = self.snapshot("now")
        outside: set[str] = set()
        for this, following in zip(later, [*later[1:], None], strict=True):
            if this.after is None:
                continue
            outside.update(path for _, path in self._diff(this.after, following.commit if following else now))
        touched = {path for _, path in self._diff(now, checkpoint.commit)}
        return sorted(outside & touched)

    def restore_files(self, checkpoint: Checkpoint) -> list[str]:
        """Put the files back as they were at `checkpoint`; the paths written or deleted.  The
        state before the restore is kept as a checkpoint commit too (`self.undo_commit`)."""
        now = self.snapshot(f"before rewinding to prompt {checkpoint.index}")
        self.undo_commit = now
        # A file over the size cap now is left as it is (it was never in the snapshot of now).
        changes = [(status, path) for status, path in self._diff(now, checkpoint.commit)
                   if not self._large(self.cwd / path)]
        write = [path for status, path in changes if status != "D"]
        for start in range(0, len(write), 200):
            with self._locked():
                self._git("checkout", checkpoint.commit, "--", *(f":(literal){p}" for p in write[start:start + 200]))
        for status, path in changes:
            if status == "D":
                target = self.cwd / path
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                _prune_empty_parents(target.parent, self.cwd)
        self._mark_current()
        return [path for _, path in changes]

    def conversation_at(self, checkpoint: Checkpoint, history: list[Any]) -> list[Any] | None:
        """The conversation as it was just before `checkpoint`'s prompt, as it is now (old tool
        results cleared since stay cleared); None when it can no longer be told (the conversation
        was compacted or replaced since)."""
        before = history[: checkpoint.history_len]
        if len(before) != checkpoint.history_len:
            return None
        return list(before) if matches(checkpoint, before) else None

    def rewind(self, session: Any, checkpoint: Checkpoint, *, code: bool = True, conversation: bool = True) -> Rewound:
        """`rewind(session, ...)` for a front end that holds only the session (`session.checkpoints`)."""
        return rewind(session, checkpoint, code=code, conversation=conversation)

    def forget_from(self, checkpoint: Checkpoint) -> None:
        """The conversation went back to before `checkpoint`: its prompt and the later ones are gone."""
        kept = [c for c in self.list() if c.index < checkpoint.index]
        with self._guard:
            self._list = kept
        self._mark_current()

    def _mark_current(self) -> None:
        """The files as they are now are agent-tui's doing (a rewind made them): not a change
        made outside agent-tui."""
        checkpoints = self.list()
        if checkpoints and checkpoints[-1].after is not None:
            after = self.snapshot("after rewind")
            with self._guard:
                checkpoints[-1].after = after
        self._save()

    # ------------------------------------------------------------ git

    def snapshot(self, message: str) -> str:
        """Commit the working tree as it is now to the shadow repository; the commit's id."""
        with self._locked():
            self._stage()
            tree = self._git("write-tree").strip()
            head = self._git("rev-parse", "-q", "--verify", "refs/heads/checkpoints", check=False).strip()
            args = ["commit-tree", tree, "-m", message] + (["-p", head] if head else [])
            commit = self._git(*args).strip()
            self._git("update-ref", "refs/heads/checkpoints", commit)
            return commit

    def warm(self) -> None:
        """Bring the shadow index up to date ahead of the first prompt (its first pass hashes every
        file; later ones only what changed), so the prompt's checkpoint is quick."""
        with contextlib.suppress(CheckpointError, OSError), self._locked():
            self._stage()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One snapshot at a time in the shadow repository, across threads and processes (two
        sessions in one project share it)."""
        self.git_dir.mkdir(parents=True, exist_ok=True)
        with open(self.git_dir / "agent-tui.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _stage(self) -> None:
        """The shadow index made to match the working tree (ignored and large files left out)."""
        self._init()
        # The project's own excludes count as its .gitignore does (read, never written).
        own = ""
        with contextlib.suppress(OSError, UnicodeDecodeError):
            own = (self.cwd / ".git" / "info" / "exclude").read_text(encoding="utf-8") + "\n"
        exclude_file = self.git_dir / "info" / "exclude"
        exclude_file.write_text(own)
        # Only a file new to the shadow index, or changed since it was staged, can be over the cap
        # now: one staged before was under it then (a stat of every file took most of a snapshot).
        new = self._git("ls-files", "-z", "--others", "--exclude-standard").split("\0")
        changed = self._git("diff-files", "-z", "--name-only").split("\0")
        maybe = dict.fromkeys(filter(None, [*self._large_before, *new, *changed]))
        large = [path for path in maybe if self._large(self.cwd / path)]
        self._large_before = large
        exclude_file.write_text(own + "".join(
            "/" + "".join("\\" + c if c in _GLOB_SPECIAL else c for c in p) + "\n" for p in large))
        if large:
            self._git("rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", *(f":(literal){p}" for p in large))
        self._git("add", "-A", "--ignore-errors", ".", check=False)

    def _large(self, path: Path) -> bool:
        try:
            return path.lstat().st_size > self.max_file_bytes
        except OSError:
            return False

    def _diff(self, a: str, b: str) -> list[tuple[str, str]]:
        """(status, path) for each file that differs from commit `a` to commit `b` (A, M, D, T)."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b).split("\0")
        fields = [f for f in out if f]
        return [(fields[i][0], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]

    def _init(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", str(self.git_dir)], check=True, env=self._env(),
                       capture_output=True)
        for key, value in (("core.bare", "false"), ("gc.auto", "0"), ("core.autocrlf", "false"),
                           ("core.quotepath", "false"), ("core.fsmonitor", "false"), ("core.symlinks", "true")):
            self._git("config", key, value)
        (self.git_dir / "info").mkdir(exist_ok=True)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(_GIT_ENV)
        env["GIT_INDEX_FILE"] = str(self.git_dir / "index")
        return env

    def _git(self, *args: str, check: bool = True) -> str:
        command = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.cwd}", *args]
        try:
            done = subprocess.run(command, cwd=self.cwd, env=self._env(), capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]}: {exc}") from exc
        if check and done.returncode != 0:
            raise CheckpointError(f"git {args[0]}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode("utf-8", errors="surrogateescape")


def _prune_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


@dataclass(slots=True)
class Rewound:
    """What a rewind did: the files it wrote or deleted, and whether the conversation went back."""

    files: list[str]
    conversation: bool


def rewind(session: Any, checkpoint: Checkpoint, *, code: bool = True, conversation: bool = True) -> Rewound:
    """Go back to just before `checkpoint`'s prompt: the files (`code`), the conversation, or both.
    CheckpointError when the conversation can no longer go back (it was compacted since)."""
    checkpoints: Checkpoints = session.checkpoints
    history = checkpoints.conversation_at(checkpoint, session.history) if conversation else None
    if conversation and history is None:
        raise CheckpointError("the conversation was compacted or replaced since that prompt; only the code can go back")
    files = checkpoints.restore_files(checkpoint) if code else []
    if history is not None:
        session.history = history
        if session.store is not None:
            session.store.sync(session.history, rewind=True)
            session.store.commit()
        checkpoints.forget_from(checkpoint)
    return Rewound(files, history is not None)
