"""Prompt shortcuts in the input box: `!command` runs the person's own command through the
permission policy (a read-only one runs, one that changes files asks, a denied one is refused) and
its output goes to the model with the next prompt; `#text` adds a line to the project's memory
file once confirmed, and the next request's system prompt has it."""

from __future__ import annotations

import json

from agent_tui.engine import events as ev
from agent_tui.tui.rewind import ChoiceScreen
from tests.loopback import reply, text

from .helpers import make_app, screen_text, type_prompt, wait_armed, wait_until


def _finished(recorded: list[ev.Event], name: str = "Bash") -> list[ev.ToolFinished]:
    return [e for e in recorded if isinstance(e, ev.ToolFinished) and e.name == name]


async def test_bang_runs_a_command_shows_it_and_the_next_prompt_carries_its_output(api, tmp_path):
    api.push(reply(text("It printed the greeting.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "!echo hello-from-shell")
        await wait_until(pilot, lambda: _finished(recorded) and not app.session.running)
        await wait_until(pilot, lambda: "hello-from-shell" in screen_text(app))
        assert not api.requests  # no model request for the person's own command
        [done] = _finished(recorded)
        assert not done.is_error and "hello-from-shell" in done.preview

        await type_prompt(pilot, "what did it print?")
        await wait_until(pilot, lambda: any(isinstance(e, ev.QueryFinished) for e in recorded))
    last = api.requests[0].body["messages"][-1]
    sent = json.dumps(last)
    assert "<bash-input>echo hello-from-shell</bash-input>\\n<bash-stdout>hello-from-shell</bash-stdout>" in sent
    assert last["content"][-1]["text"] == "what did it print?"
    # The history has no tool_use of it: only the prompt's user message.
    assert len(api.requests[0].body["messages"]) == 1


async def test_bang_asks_before_a_command_that_changes_files_and_no_leaves_nothing(api, tmp_path):
    api.push(reply(text("ok")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "!touch made.txt")
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, lambda: _finished(recorded) and not app.session.running)
        await type_prompt(pilot, "hello")
        await wait_until(pilot, lambda: any(isinstance(e, ev.QueryFinished) for e in recorded))
    assert not (tmp_path / "made.txt").exists()
    assert "<bash-input>" not in json.dumps(api.requests[0].body["messages"])


async def test_bang_is_refused_by_a_deny_rule(api, tmp_path):
    (tmp_path / ".agent-tui").mkdir()
    app, recorded = make_app(api, tmp_path)
    app.session.policy.add_rule("Bash(echo:*)", "deny", source="session")
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "!echo not-allowed")
        await wait_until(pilot, lambda: _finished(recorded) and not app.session.running)
    [done] = _finished(recorded)
    assert done.is_error and done.status == "rejected"
    assert app.session.permission_denials


async def test_hash_adds_a_line_to_the_project_memory_file_once_confirmed(api, tmp_path):
    (tmp_path / "CLAUDE.md").write_text("# Project notes\n- use tabs")
    api.push(reply(text("noted")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "# never edit generated files")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_until(pilot, lambda: "Not added to memory." in screen_text(app))
        assert (tmp_path / "CLAUDE.md").read_text() == "# Project notes\n- use tabs"

        await type_prompt(pilot, "# run the tests with make check")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "CLAUDE.md" in str(app.screen.query_one("#choice-title").render())
        await pilot.press("enter")
        await wait_until(pilot, lambda: "Added to CLAUDE.md" in screen_text(app))
        await type_prompt(pilot, "hello")
        await wait_until(pilot, lambda: any(isinstance(e, ev.QueryFinished) for e in recorded))
    assert (tmp_path / "CLAUDE.md").read_text() == "# Project notes\n- use tabs\n- run the tests with make check\n"
    assert "- run the tests with make check" in json.dumps(api.requests[0].body["system"])
    assert not (tmp_path / "AGENTS.md").exists()
