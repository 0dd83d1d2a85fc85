"""The first frame comes before the session: the engine loads behind it.

`agent-tui` without -c/-r/--mcp-config hands the app a `SessionStart`; the app draws the
header, the input and the gauge, then loads the engine in a thread and makes the session.
Here the load waits on a gate the test opens, so the "before" is as long as a test needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from agent_tui.config import Settings
from agent_tui.engine import events as ev
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session
from agent_tui.tools.registry import default_tools
from agent_tui.tools.sandbox import SandboxConfig
from agent_tui.tui.app import AgentApp
from agent_tui.tui.start import SessionStart
from tests.loopback import reply, text

from .helpers import SESSION_ID, finished, screen_text, settle, type_prompt, wait_until


class PreparedModel(AnthropicModel):
    """Notes where (which thread) and when (session made yet?) `prepare` runs."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prepared: list[tuple[str, bool]] = []
        self.app: AgentApp | None = None

    def prepare(self) -> None:
        self.prepared.append((threading.current_thread().name, self.app is not None and self.app.session is not None))
        super().prepare()


def deferred_app(api, cwd: Path, gate: threading.Event, *, fail: Exception | None = None):
    """An app on a SessionStart whose engine load waits for `gate`; the bus events, recorded."""
    recorded: list[ev.Event] = []
    built: list[Session] = []
    model = PreparedModel("claude-sonnet-4-6", base_url=api.url, api_key="test")

    def build():
        if fail is not None:
            raise fail
        session = Session(
            model=model,
            tools=default_tools(sandbox=SandboxConfig(enabled=False)),
            cwd=cwd,
            policy=PermissionPolicy(mode="acceptEdits", cwd=cwd),
            session_id=SESSION_ID,
        )
        session.bus.add_listener(recorded.append)
        built.append(session)
        return session, {}

    def load() -> None:
        assert gate.wait(60), "the test never opened the gate"

    start = SessionStart(cwd, Settings(), model, "acceptEdits", SESSION_ID, build, load)
    model.app = AgentApp(start)
    return model.app, recorded, built


async def test_the_first_frame_shows_the_header_before_the_session_exists(api, tmp_path):
    gate = threading.Event()
    app, _, built = deferred_app(api, tmp_path, gate)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.pause()
            assert app.session is None and not built
            shown = screen_text(app)
            assert "claude-sonnet-4-6" in shown
            assert "accept edits" in shown
            assert "type a request and press Enter" in shown
            # (The id is drawn after the directory, whose length depends on where tests run.)
            assert app.header.session_id == SESSION_ID
            gate.set()
            await wait_until(pilot, lambda: app.session is not None)
            # The session has the id the first frame showed.
            assert app.session.session_id == app.header.session_id == SESSION_ID
            # Then the model does ahead, off the event loop's thread, what the first request would.
            await wait_until(pilot, lambda: app.session.model.prepared)
            [(thread, after_session)] = app.session.model.prepared
            assert thread != threading.main_thread().name and after_session
    finally:
        gate.set()


async def test_a_prompt_sent_before_the_session_exists_runs_once_it_does(api, tmp_path):
    api.push(reply(text("answered after the engine loaded")))
    gate = threading.Event()
    app, recorded, _ = deferred_app(api, tmp_path, gate)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await type_prompt(pilot, "early bird")
            await pilot.pause()
            assert app.session is None
            assert api.requests == []
            gate.set()
            await wait_until(pilot, finished(recorded))
            await settle(pilot, app)
            shown = screen_text(app)
            assert "› early bird" in shown
            assert "answered after the engine loaded" in shown
    finally:
        gate.set()
    assert [r.body["messages"][0]["content"][0]["text"] for r in api.requests] == ["early bird"]


async def test_two_prompts_sent_early_go_in_the_order_typed(api, tmp_path):
    api.push(reply(text("one")), reply(text("two")))
    gate = threading.Event()
    app, recorded, _ = deferred_app(api, tmp_path, gate)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await type_prompt(pilot, "first")
            await type_prompt(pilot, "second")
            gate.set()
            await wait_until(pilot, finished(recorded, 2))
            await settle(pilot, app)
    finally:
        gate.set()
    assert [r.body["messages"][-1]["content"][0]["text"] for r in api.requests] == ["first", "second"]


async def test_escape_and_shift_tab_before_the_session_exists(api, tmp_path):
    gate = threading.Event()
    app, _, _ = deferred_app(api, tmp_path, gate)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("escape", "shift+tab")
            await pilot.pause()
            assert app.is_running and app.session is None
            gate.set()
            await wait_until(pilot, lambda: app.session is not None)
            # The mode change waited for the policy, then applied: acceptEdits -> plan.
            await wait_until(pilot, lambda: app.session.policy.mode == "plan")
            await wait_until(pilot, lambda: "plan mode" in screen_text(app))
    finally:
        gate.set()


async def test_quitting_before_the_session_exists_exits_cleanly(api, tmp_path):
    gate = threading.Event()
    app, _, built = deferred_app(api, tmp_path, gate)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.press("ctrl+q")
            await pilot.pause()
    finally:
        gate.set()
    assert app.return_code == 0
    assert not built


async def test_a_session_that_cannot_be_made_ends_the_app_with_status_2(api, tmp_path):
    gate = threading.Event()
    gate.set()
    app, _, _ = deferred_app(api, tmp_path, gate, fail=ValueError("unknown permission mode 'x'"))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: not app.is_running)
    assert app.return_code == 2


def test_the_first_frame_loads_no_engine_module():
    """What `agent-tui` imports before its first frame: the app, the settings and the model
    client; the loop, the executor, the tools, the permission policy and the store come after."""
    probe = (
        "import sys, agent_tui.cli, agent_tui.tui.app, agent_tui.engine.models.anthropic, "
        "agent_tui.engine.models.demo.model; print(' '.join(sorted(sys.modules)))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
                 .stdout.split())
    engine = {
        "agent_tui.engine.session", "agent_tui.engine.events", "agent_tui.engine.bus", "agent_tui.engine.hooks",
        "agent_tui.engine.loop", "agent_tui.engine.context", "agent_tui.engine.permissions.policy",
        "agent_tui.engine.store", "agent_tui.engine.memory", "agent_tui.tools.registry", "agent_tui.tools.base",
        "agent_tui.shell", "agent_tui.tui.conversation", "agent_tui.tui.bridge", "anthropic", "httpx2",
    }
    assert sorted(loaded & engine) == []


def test_what_the_first_frame_shows_is_what_the_session_has(tmp_path, monkeypatch):
    """The mode and id the command line's SessionStart shows are the ones its session gets,
    wherever the mode comes from: the flag, the environment, a settings file."""
    from agent_tui import cli
    from agent_tui.config import load_settings

    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("AGENT_TUI_PERMISSION_MODE", raising=False)
    project = tmp_path / "project"
    (project / ".agent-tui").mkdir(parents=True)
    (project / ".agent-tui" / "settings.json").write_text('{"permissions": {"defaultMode": "plan"}}')
    cases = [([], {}, "plan"), (["--permission-mode", "acceptEdits"], {}, "acceptEdits"),
             (["--permission-mode", "acceptEdits"], {"AGENT_TUI_PERMISSION_MODE": "default"}, "default")]
    for argv, env, expected in cases:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        args = cli.build_parser().parse_args(argv)
        settings = load_settings(project, flags=cli.flag_settings(args))
        start = cli._session_start(args, project, settings, cli.choose_model(settings, offline=True))
        session, pending = start.build()
        assert (start.mode, session.policy.mode) == (expected, expected)
        assert session.session_id == start.session_id
        assert pending == {}


def test_a_project_with_an_mcp_json_builds_the_session_before_the_first_frame(tmp_path):
    """Its approval question (answered with y / a / n) must be on screen from the first frame:
    popping up later, over a prompt being typed, the typed letters would answer it."""
    from agent_tui import cli

    parse = cli.build_parser().parse_args
    assert cli._first_frame_first(parse([]), tmp_path)
    assert cli._first_frame_first(parse(["a prompt to start with"]), tmp_path)
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
    assert not cli._first_frame_first(parse([]), tmp_path)
    (tmp_path / ".mcp.json").unlink()
    for argv in (["-c"], ["-r"], ["-r", "some-id"], ["--mcp-config", "{}"], ["-p", "hi"]):
        assert not cli._first_frame_first(parse(argv), tmp_path), argv


def test_a_full_screen_resume_reads_the_stored_session_before_the_app_and_the_engine_after(tmp_path, capsys):
    """`-c` and `-r ID` draw the last screen before the engine loads (docs/architecture.md §8); what must
    be settled before the full screen (a print run, --rewind-files, an MCP question) still builds first."""
    from agent_tui import cli
    from agent_tui.config import Settings

    parse = cli.build_parser().parse_args
    for argv in (["-c"], ["--continue", "a prompt"], ["-r", "some-id"], ["-c", "--fork-session"]):
        assert cli._last_screen_first(parse(argv), tmp_path), argv
    for argv in ([], ["-r"], ["-p", "-c", "hi"], ["-c", "--rewind-files", "x"], ["-c", "--mcp-config", "{}"]):
        assert not cli._last_screen_first(parse(argv), tmp_path), argv
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
    assert not cli._last_screen_first(parse(["-c"]), tmp_path)
    # Nothing to continue: said on the terminal before any full screen, as before.
    assert cli._resumed_start(parse(["-c"]), tmp_path, Settings(), None) == 1
    assert "agent-tui: cannot continue" in capsys.readouterr().err


def test_the_front_end_asks_textual_for_finer_frame_ticks_unless_the_user_set_them():
    probe = (
        "import os, agent_tui.tui, textual.constants as c; "
        "print(c.MAX_FPS, os.environ.get('TEXTUAL_FPS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}

    def run(**extra: str) -> str:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                              env={**env, **extra})
        return done.stdout.strip()

    # Not passed on to what tools run (they inherit the environment).
    assert run() == "120 None"
    assert run(TEXTUAL_FPS="30") == "30 30"


async def test_the_first_layout_waits_for_the_apps_mounting_and_later_batches_are_textuals(api, tmp_path, monkeypatch):
    """A layout asked for while the app's mounting batches its updates is made when the batch ends
    (`InputFirstScreen._refresh_layout`); a resize in a later batch is laid out as Textual lays it out."""
    from textual.geometry import Size
    from textual.screen import Screen

    from .helpers import make_app

    app, _ = make_app(api, tmp_path)
    layouts: list[int] = []  # the app's batch depth at each layout made
    made = Screen._refresh_layout

    def noted(screen, size=None, scroll=False):
        layouts.append(screen.app._batch_count)
        return made(screen, size, scroll)

    monkeypatch.setattr(Screen, "_refresh_layout", noted)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.session is not None and layouts)
        assert layouts[0] == 0
        with app.batch_update():
            await pilot.resize_terminal(120, 36)
        await wait_until(pilot, lambda: app.screen.outer_size == Size(120, 36))
        await wait_until(pilot, lambda: app.query_one("#input-area").outer_size.width == 120)
        assert "ready" in screen_text(app)
