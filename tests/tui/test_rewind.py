"""/rewind and Esc Esc in the app: choose a prompt and what goes back; files and conversation
return to just before it, and a file changed outside agent-tui is only overwritten once confirmed."""

from __future__ import annotations

import pytest

from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.rewind import ChoiceScreen
from tests.loopback import reply, text, tool_use

from .helpers import screen_text, type_prompt, wait_until


def _app(api, cwd) -> AgentApp:
    session = Session(model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
                      tools=default_tools(), cwd=cwd, policy=PermissionPolicy(mode="bypassPermissions"),
                      options=SessionOptions(persist=True))
    return AgentApp(session)


async def _prompt(pilot, app, text_: str, count: int) -> None:
    await type_prompt(pilot, text_)
    await wait_until(pilot, lambda: not app.session.running and len(app.session.checkpoints.list()) == count
                     and app.session.checkpoints.list()[-1].after is not None)


async def _choose(pilot, app, label: str) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
    screen = app.screen
    options = screen.query_one("#choice-options")
    index = next(i for i in range(options.option_count) if label in str(options.get_option_at_index(i).prompt))
    options.highlighted = index
    await pilot.press("enter")
    await wait_until(pilot, lambda: app.screen is not screen)


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "data"))


async def test_esc_esc_rewinds_code_and_conversation_after_asking_about_an_outside_change(api, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("one\n")
    api.push(reply(tool_use("Bash", {"command": "echo two > notes.txt"}, id="t1")), reply(text("wrote two")),
             reply(tool_use("Bash", {"command": "echo three > notes.txt"}, id="t2")), reply(text("wrote three")))
    app = _app(api, project)
    async with app.run_test(size=(100, 32)) as pilot:
        await _prompt(pilot, app, "write two", 1)
        await _prompt(pilot, app, "write three", 2)
        (project / "other.txt").write_text("by hand\n")
        await pilot.press("escape", "escape")
        await _choose(pilot, app, "2. write three")
        await _choose(pilot, app, "Code and conversation")
        await wait_until(pilot, lambda: "changed outside agent-tui" in screen_text(app))
        assert "other.txt" in screen_text(app)
        await _choose(pilot, app, "Overwrite them and rewind")
        await wait_until(pilot, lambda: "Rewound to before prompt 2" in screen_text(app))
        assert (project / "notes.txt").read_text() == "two\n" and not (project / "other.txt").exists()
        assert "wrote three" not in screen_text(app) and "wrote two" in screen_text(app)
        assert app.prompt_input.text == "write three"
        assert "write three" not in str(app.session.history)


async def test_rewind_code_only_keeps_the_conversation_and_cancel_changes_nothing(api, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("one\n")
    api.push(reply(tool_use("Bash", {"command": "echo two > notes.txt"}, id="t1")), reply(text("wrote two")))
    app = _app(api, project)
    async with app.run_test(size=(100, 32)) as pilot:
        await _prompt(pilot, app, "write two", 1)
        await type_prompt(pilot, "/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert (project / "notes.txt").read_text() == "two\n"
        await type_prompt(pilot, "/rewind")
        await _choose(pilot, app, "1. write two")
        await _choose(pilot, app, "Code only")
        await wait_until(pilot, lambda: "Rewound to before prompt 1" in screen_text(app))
        assert (project / "notes.txt").read_text() == "one\n"
        assert "wrote two" in str(app.session.history)
