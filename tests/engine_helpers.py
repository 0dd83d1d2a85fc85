"""Helpers for engine tests: a Session on the real SDK against the loopback server."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from agent_tui.engine import events as ev
from agent_tui.engine.loop.attempts import RetryPolicy
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05, max_retry_after=0.2)


def turn_notice(event: ev.Event) -> bool:
    """A Notice the test's own turn caused: not the session's start notice about the sandbox,
    which appears only on machines without bubblewrap."""
    return isinstance(event, ev.Notice) and event.kind != "sandbox"


def system_text(body: dict[str, Any]) -> str:
    """A request's system prompt as one string, whether sent as blocks (cached) or a string."""
    system = body.get("system", "")
    return system if isinstance(system, str) else "\n\n".join(b["text"] for b in system)


def uncached(value: Any) -> Any:
    """`value` without the prompt-cache markers, to compare request parts with the history."""
    if isinstance(value, dict):
        return {k: uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [uncached(v) for v in value]
    return value


def make_session(
    url: str, cwd: Path, *, policy: PermissionPolicy | None = None, model: str = "claude-sonnet-4-6", **options: Any
) -> Session:
    options.setdefault("retry", FAST_RETRY)
    return Session(
        model=AnthropicModel(model, base_url=url, api_key="test-key"),
        tools=default_tools(),
        cwd=cwd,
        policy=policy or PermissionPolicy(mode="default"),
        options=SessionOptions(**options),
    )


class Recorder:
    """Records every bus event with its arrival time (a synchronous listener)."""

    def __init__(self, session: Session) -> None:
        self.events: list[tuple[float, ev.Event]] = []
        session.bus.add_listener(lambda e: self.events.append((time.monotonic(), e)))

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [e for _, e in self.events if isinstance(e, kind)]

    def times(self, kind: type[ev.Event], tool_use_id: str) -> float:
        return next(t for t, e in self.events if isinstance(e, kind) and getattr(e, "tool_use_id", None) == tool_use_id)


def auto_answer(session: Session, answer: PermissionAnswer) -> None:
    """Resolve every permission request with `answer` as soon as it is published."""

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.PermissionRequested) and event.future is not None:
            asyncio.get_running_loop().call_soon(
                lambda: event.future.done() or event.future.set_result(answer)
            )

    session.bus.add_listener(on_event)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user message of a request body (cache markers left out)."""
    last = uncached(body["messages"][-1])
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def alive(pid: int) -> bool:
    """Running, not merely a zombie that nobody has reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def tagged_pids(tag: str) -> list[int]:
    """Live host processes whose command line holds `tag`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline and alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids
