"""Stored sessions of any length, written as agent-tui writes them (for resume tests and benchmarks).

Each turn is a prompt, an answer with a short Markdown body and a Read tool call,
the tool's result and a closing answer: four messages and the events the store
records for them (`TranscriptStore`), so `agent-tui -c` replays it as it would a
real session; `write_claude_session` writes the same conversation in Claude Code's
session format, for `claude -c` side by side.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

from agent_tui.engine import events as ev
from agent_tui.engine.store import TranscriptStore

ANSWER = (
    "Here is what the file does, turn {n}:\n\n"
    "- it reads the **settings** and the `cache` folder\n"
    "- it starts the loop and the tools\n\n"
    "```python\ndef step_{n}(x):\n    return x + {n}\n```\n\n"
    "Then it waits for the next prompt."
)


def first_prompt(session_id: str) -> str:
    return f"FIRST-PROMPT of {session_id[:8]}: read the main module"


def write_session(cwd: Path, session_id: str, turns: int, *, directory: Path | None = None) -> Path:
    """A stored session of `turns` prompts in `cwd`'s project folder (or `directory`); its path."""
    store = TranscriptStore(cwd, session_id, directory=directory)
    store.record_event(ev.SessionStarted(session_id=session_id, model="claude-sonnet-4-6", cwd=str(cwd),
                                         permission_mode="default", tools=["Read"]))
    for n in range(turns):
        prompt = first_prompt(session_id) if n == 0 else f"prompt {n}: and the next module?"
        if n == turns - 1:
            prompt = f"LAST-PROMPT {n}"
        tool_id = f"toolu_{n:05d}"
        path = str(cwd / f"module_{n}.py")
        store.append_message({"role": "user", "content": [{"type": "text", "text": prompt}]})
        store.record_event(ev.UserMessage(text=prompt))
        store.append_message({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading module {n}."},
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": path}},
        ]})
        store.record_event(ev.ToolQueued(tool_use_id=tool_id, name="Read", input={"file_path": path},
                                         summary=path, concurrency_safe=True))
        body = "".join(f"{i}\tline {i} of module {n}\n" for i in range(1, 21))
        store.record_event(ev.ToolFinished(tool_use_id=tool_id, name="Read", is_error=False, preview=body[:200],
                                           duration=0.01, data={"lines_read": 20}))
        store.append_message({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": body},
        ]})
        store.append_message({"role": "assistant", "content": [{"type": "text", "text": ANSWER.format(n=n)}]})
    store.close()
    return store.path


def claude_project_dir(config_dir: Path, cwd: Path) -> Path:
    """Where Claude Code keeps a project's sessions: its path with every other character a dash."""
    return config_dir / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd.resolve()))


def write_claude_session(config_dir: Path, cwd: Path, session_id: str, turns: int) -> Path:
    """The same conversation as `write_session`, as a Claude Code session file (for `claude -c`)."""
    folder = claude_project_dir(config_dir, cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    parent: str | None = None
    start = time.time() - 10 * turns

    def entry(kind: str, message: dict, n: int, **extra: object) -> str:
        nonlocal parent
        uid = str(uuid.uuid4())
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start + n))
        record = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": str(cwd.resolve()),
                  "sessionId": session_id, "version": "2.1.197", "gitBranch": "", "type": kind,
                  "message": message, "uuid": uid, "timestamp": stamp, **extra}
        parent = uid
        return json.dumps(record)

    lines: list[str] = []
    for n in range(turns):
        prompt = first_prompt(session_id) if n == 0 else f"prompt {n}: and the next module?"
        if n == turns - 1:
            prompt = f"LAST-PROMPT {n}"
        tool_id = f"toolu_{n:05d}"
        path_n = str(cwd / f"module_{n}.py")
        body = "".join(f"{i}\tline {i} of module {n}\n" for i in range(1, 21))
        lines.append(entry("user", {"role": "user", "content": prompt}, 4 * n))
        lines.append(entry("assistant", {
            "id": f"msg_{n:05d}a", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": f"Reading module {n}."},
                        {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": path_n}}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10},
        }, 4 * n + 1, requestId=f"req_{n:05d}a"))
        lines.append(entry("user", {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": body}]}, 4 * n + 2))
        lines.append(entry("assistant", {
            "id": f"msg_{n:05d}b", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": ANSWER.format(n=n)}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10},
        }, 4 * n + 3, requestId=f"req_{n:05d}b"))
    path.write_text("\n".join(lines) + "\n")
    return path
