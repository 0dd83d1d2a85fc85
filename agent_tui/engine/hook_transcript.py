"""The conversation as Claude Code writes its transcript, for hook scripts (`transcript_path`).

Hook scripts written for Claude Code read `transcript_path` as JSON lines, one message each:
`{"type": "user" | "assistant", "message": {"role", "content", ...}, "uuid", "parentUuid",
"sessionId", "cwd", "timestamp", "isSidechain"}`.  agent-tui's own transcript (engine/store.py)
has another shape, so a session with hooks keeps this one beside it: each message is appended
as the loop completes it (before the hooks that follow it run), and when earlier messages
changed (compaction, /rewind, a resume) the file is rewritten whole.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .messages import Message


class HookTranscript:
    """One session's messages in Claude Code's transcript lines, at `path`."""

    def __init__(self, path: Path, *, session_id: str, cwd: Path) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = str(cwd)
        self._messages: list[Message] = []
        self._last_uuid: str | None = None
        self._written = False

    def append(self, message: Message) -> None:
        """One message the conversation gained."""
        self._messages.append(message)
        self._write([self._line(message)], mode="a")

    def sync(self, history: list[Message]) -> None:
        """Make the file hold `history`: what is new appended, the whole file rewritten when an
        earlier message changed."""
        old = self._messages
        keep = 0
        limit = min(len(old), len(history))
        while keep < limit and (old[keep] is history[keep] or old[keep] == history[keep]):
            keep += 1
        if keep == len(old) and self._written:
            for message in history[keep:]:
                self.append(message)
            return
        self._messages, self._last_uuid = list(history), None
        self._write([self._line(m) for m in history], mode="w")

    def ensure(self) -> str:
        """The file's path, the file created (empty) if nothing was written yet."""
        if not self._written:
            self._write([], mode="a")
        return str(self.path)

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _line(self, message: Message) -> str:
        line_uuid = str(uuid.uuid4())
        record: dict[str, Any] = {
            "parentUuid": self._last_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "type": "assistant" if message.get("role") == "assistant" else "user",
            "message": message,
            "uuid": line_uuid,
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        self._last_uuid = line_uuid
        return json.dumps(record, ensure_ascii=False, default=str) + "\n"

    def _write(self, lines: list[str], *, mode: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if mode == "w":
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text("".join(lines), encoding="utf-8")
                tmp.replace(self.path)
            else:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write("".join(lines))
        except OSError:
            return  # hooks then read what is there; the session goes on
        self._written = True
