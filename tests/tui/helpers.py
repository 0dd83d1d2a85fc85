"""Building an `AgentApp` against the loopback server, and waiting on it."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot

from agent_tui.engine import events as ev
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session
from agent_tui.tools.registry import default_tools
from agent_tui.tools.sandbox import SandboxConfig
from agent_tui.tui.app import AgentApp
from tests.loopback import LoopbackServer

SESSION_ID = "5e55100d-0000-4000-8000-000000000001"


def make_app(
    api: LoopbackServer,
    cwd: Path,
    *,
    allow: list[str] | None = None,
    mode: str = "default",
    sandbox: bool = False,
    **app_options: Any,
) -> tuple[AgentApp, list[ev.Event]]:
    """An app on a real Session whose model talks to `api`; and the bus events, recorded.

    Bash is unsandboxed unless `sandbox`: screens must not depend on whether bwrap is installed.
    """
    policy = PermissionPolicy(
        mode=mode,
        allow=list(allow or []),
        local_settings_path=cwd / ".agent-tui" / "settings.local.json",
        cwd=cwd,
    )
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(sandbox=SandboxConfig(enabled=sandbox)),
        cwd=cwd,
        policy=policy,
        session_id=SESSION_ID,
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    return AgentApp(session, **app_options), recorded


async def wait_until(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {getattr(condition, '__name__', condition)}")
        await pilot.pause(0.02)


def finished(recorded: list[ev.Event], count: int = 1) -> Callable[[], bool]:
    def done() -> bool:
        return sum(isinstance(e, ev.QueryFinished) for e in recorded) >= count

    return done


async def settle(pilot: Pilot[Any], app: AgentApp) -> None:
    """Wait until the app has handled everything the engine published."""
    await wait_until(pilot, lambda: not app.session.running and app.gauge.finished_at is not None)
    await pilot.pause(0.05)


def screen_text(app: AgentApp) -> str:
    """What the terminal shows, as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    message = body["messages"][-1]
    assert message["role"] == "user"
    return message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]


async def type_prompt(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def wait_armed(pilot: Pilot[Any], app: AgentApp, *, always: bool = False, timeout: float = 15.0) -> None:
    """Wait until the permission prompt takes answers: it arms after a pause in typing once it
    is drawn, and takes `a` once it has been on screen a while (`widgets/permission.py`)."""
    prompt = app.permission

    def ready() -> bool:
        return prompt.current is not None and (prompt.always_armed if always else prompt.armed)

    await wait_until(pilot, ready, timeout)
