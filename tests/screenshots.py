"""Regenerate the README screenshots: `python -m tests.screenshots [--out DIR]`.

Each scene runs the real app headless against the offline demo model and
its real tools, in a throw-away project under a throw-away HOME (so the
header reads `~/demo-project`), with a stepped clock so the times shown are
the same on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from agent_tui.engine.models.demo.model import DemoModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.state import ToolStatus

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "screenshots"
SESSION_ID = "d3m0c0de-5c4e-4e5e-8000-000000000001"
# A common small terminal (the timeline folds into its strip) and a large one.
SIZES = ((80, 24), (160, 48))

Scene = Callable[[Pilot[int], "SteppedClock"], Awaitable[None]]


class SteppedClock:
    """The app's clock, moved on by the scene between stages."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _project(home: Path) -> Path:
    root = home / "demo-project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(
        '"""A tiny web app."""\n\nfrom .util import slugify\n\n\n'
        "def route(title):\n    return '/posts/' + slugify(title)\n"
    )
    (root / "src" / "util.py").write_text(
        "import re\n\n\ndef slugify(text):\n    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n"
    )
    (root / "README.md").write_text("# demo-project\n\nA tiny web app used in the agent-tui screenshots.\n")
    return root


async def _wait(pilot: Pilot[int], condition: Callable[[], object], timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the scene did not reach its state")
        await pilot.pause(0.02)


async def _type(pilot: Pilot[int], prompt: str) -> None:
    await pilot.press(*prompt, "enter")


async def streaming_with_tools(pilot: Pilot[int], clock: SteppedClock) -> None:
    app = pilot.app
    assert isinstance(app, AgentApp)
    await _type(pilot, "list files and search for slugify and read src/app.py and run sleep 30; ls src")
    await _wait(pilot, lambda: any(r.name == "Glob" and r.finished for r in app.conversation.tool_records.values()))
    clock.now += 0.6
    await _wait(pilot, lambda: any(r.name == "Bash" and r.status is ToolStatus.RUNNING for r in app.conversation.tool_records.values()))
    clock.now += 2.4
    await pilot.pause(0.3)


async def permission_with_diff(pilot: Pilot[int], clock: SteppedClock) -> None:
    app = pilot.app
    assert isinstance(app, AgentApp)
    await _type(pilot, "write CHANGELOG.md with ## 0.2.0 - slugify handles unicode titles")
    await _wait(pilot, lambda: app.permission.current is not None)
    # Armed: the answer keys in full colour, not the dimmed "arming…" row.
    await _wait(pilot, lambda: app.permission.always_armed)
    clock.now += 1.2
    await pilot.pause(0.3)


async def light_theme(pilot: Pilot[int], clock: SteppedClock) -> None:
    app = pilot.app
    assert isinstance(app, AgentApp)
    await _type(pilot, "read src/util.py and run ls -1 src")
    await _wait(pilot, lambda: app.gauge.finished_at is not None, timeout=30)
    await pilot.pause(0.3)


SCENES: dict[str, tuple[Scene, str | None, str]] = {
    "streaming-turn": (streaming_with_tools, None, "default"),
    "permission-prompt": (permission_with_diff, None, "default"),
    "light-theme": (light_theme, "agent-light", "default"),
}


def _shoot(name: str, scene: Scene, theme: str | None, mode: str, home: Path, size: tuple[int, int]) -> str:
    home = home / f"{name}-{size[0]}x{size[1]}"
    project = _project(home)
    os.environ["HOME"] = str(home)
    # One clock for the app and the executor: tool durations are the engine's measure.
    clock = SteppedClock()
    session = Session(
        model=DemoModel(speed=4.0),
        tools=default_tools(),
        cwd=project,
        policy=PermissionPolicy(mode=mode, allow=["Bash(sleep:*)"]),
        session_id=SESSION_ID,
        options=SessionOptions(clock=clock),
    )
    app = AgentApp(session, theme=theme)
    app.clock = clock
    result: list[str] = []

    async def auto_pilot(pilot: Pilot[int]) -> None:
        app.prompt_input.cursor_blink = False
        await pilot.pause()
        await scene(pilot, clock)
        result.append(app.export_screenshot(title="agent-tui"))
        session.abort()
        app.exit(0)

    app.run(headless=True, size=size, auto_pilot=auto_pilot)
    return result[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder for the SVGs (default: {DEFAULT_OUT})")
    parser.add_argument("scenes", nargs="*", help=f"scenes to shoot: {', '.join(SCENES)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenes if s not in SCENES]
    if unknown:
        parser.error(f"unknown scene {unknown[0]!r}; choose from {', '.join(SCENES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    home = os.environ.get("HOME")
    try:
        with tempfile.TemporaryDirectory(prefix="agent-tui-shots-") as tmp:
            for name in args.scenes or list(SCENES):
                scene, theme, mode = SCENES[name]
                for size in SIZES:
                    svg = _shoot(name, scene, theme, mode, Path(tmp), size)
                    target = args.out / f"{name}-{size[0]}x{size[1]}.svg"
                    target.write_text(svg, encoding="utf-8")
                    print(f"wrote {target}")
    finally:
        if home is not None:
            os.environ["HOME"] = home
    return 0


if __name__ == "__main__":
    sys.exit(main())
