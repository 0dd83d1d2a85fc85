"""Stored sessions of any length, written as agent-tui writes them (for resume tests and benchmarks).

Each turn is a prompt, an answer with a short Markdown body and a Read tool call,
the tool's result and a closing answer: four messages and the events the store
records for them (`TranscriptStore`), so `agent-tui -c` replays it as it would a
real session.
"""

from __future__ import annotations

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
