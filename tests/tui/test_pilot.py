"""The TUI driven as a person would: keys in, the loopback Messages API behind it.

Each test scripts the server, types into the app, and asserts on what the
screen shows, the requests the server received and the bus events.
"""

from __future__ import annotations

import asyncio
import json
import re

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.tui.state import ToolStatus
from agent_tui.tui.widgets.answer import AssistantText
from agent_tui.tui.widgets.markdown_lite import FrozenMarkdown
from agent_tui.tui.widgets.permission import PermissionPrompt
from agent_tui.tui.widgets.thinking import ThinkingBlock
from tests.loopback import gated, hang, reply, sse_error, text, thinking, tool_use

from .helpers import finished, last_user_blocks, make_app, screen_text, settle, type_prompt, wait_armed, wait_until

ANSWER = "Here is the plan:\n\n- read the **config**\n- run the tests\n\nDone with `step one`."


async def test_streamed_text_appears_in_the_transcript(api, tmp_path):
    api.push(reply(text(ANSWER), chunk=5, delay=0.002))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "make a plan")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "› make a plan" in shown
        assert "Here is the plan:" in shown
        assert "read the config" in shown
        assert "Done with step one." in shown
    assert api.requests[0].body["messages"][0]["content"][0]["text"] == "make a plan"


async def test_tool_rows_go_queued_running_done_with_their_time(api, tmp_path):
    # Commands that change something are not concurrency-safe: the second waits for the first.
    first = tool_use("Bash", {"command": "sleep 0.4; touch one"}, id="toolu_first")
    second = tool_use("Bash", {"command": "sleep 0.3; touch two"}, id="toolu_second")
    api.push(reply(first, second), reply(text("Both ran.")))
    app, recorded = make_app(api, tmp_path, mode="bypassPermissions")
    log: list[tuple[str, str]] = []  # every status the timeline is told of, in order
    async with app.run_test(size=(120, 30)) as pilot:
        add_tool, refresh = app.timeline.add_tool, app.conversation.refresh_tool

        def record_added(record) -> None:
            log.append((record.tool_use_id, record.status))
            add_tool(record)

        def record_status(record) -> None:
            if log[-1] != (record.tool_use_id, record.status):
                log.append((record.tool_use_id, record.status))
            refresh(record)

        app.timeline.add_tool, app.conversation.refresh_tool = record_added, record_status
        await type_prompt(pilot, "sleep twice")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        for tool_id in ("toolu_first", "toolu_second"):
            assert [status for tid, status in log if tid == tool_id] == [ToolStatus.QUEUED, ToolStatus.RUNNING, ToolStatus.DONE], log
        # The second waits for the first: it starts only after the first is done.
        assert log.index(("toolu_first", ToolStatus.DONE)) < log.index(("toolu_second", ToolStatus.RUNNING)), log
        durations = {e.tool_use_id: e.duration for e in recorded if isinstance(e, ev.ToolFinished)}
        for tool_id, at_least in (("toolu_first", 0.4), ("toolu_second", 0.3)):
            shown = app.timeline.row_text(tool_id)
            seconds = float(re.search(r"(\d+\.\d)s\s*$", shown).group(1))
            # The row shows the engine's measure, which covers the sleep however late the UI heard of it.
            assert durations[tool_id] >= at_least and seconds == float(f"{durations[tool_id]:.1f}"), shown
        assert "Both ran." in screen_text(app)


class _SteppingClock:
    """A clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 100.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def test_a_tool_shows_the_duration_the_engine_measured_whatever_the_ui_clock_says(api, tmp_path):
    api.push(reply(tool_use("Glob", {"pattern": "*.txt"}, id="toolu_glob")), reply(text("None.")))
    app, recorded = make_app(api, tmp_path)
    # The engine reads its clock at the start and at the end of the run: 2.5 s apart.
    app.session.options.clock = _SteppingClock(2.5)
    # The UI's clock races ahead by a minute at every read, as a starved event loop would.
    app.clock = _SteppingClock(60.0)
    async with app.run_test(size=(120, 30)) as pilot:
        await type_prompt(pilot, "any text files?")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert [e.duration for e in recorded if isinstance(e, ev.ToolFinished)] == [2.5]
        row = app.timeline.row_text("toolu_glob")
        assert re.search(r"\s2\.5s\s*$", row), row
        assert "Glob(*.txt)  ⎿ 2.5s" in screen_text(app)


def _write_call(path, content="hello\n", id=None):
    return tool_use("Write", {"file_path": str(path), "content": content}, id=id)


async def _answer_write_prompt(api, tmp_path, keys):
    target = tmp_path / "notes.txt"
    api.push(reply(_write_call(target)), reply(text("Understood.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "write the notes")
        prompt = app.query_one(PermissionPrompt)
        await wait_until(pilot, lambda: prompt.display and prompt.current is not None)
        shown = screen_text(app)
        assert "Permission needed" in shown and "Write" in shown
        assert "+hello" in shown  # the diff of the new file
        await wait_armed(pilot, app)
        await pilot.press(*keys)
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert app.focused is app.prompt_input
        assert not prompt.display
    return target, recorded, app


async def test_write_rejected_with_n_leaves_the_file_and_ends_the_turn(api, tmp_path):
    target, recorded, app = await _answer_write_prompt(api, tmp_path, ["n"])
    assert not target.exists()
    assert len(api.requests) == 1, "a plain no returns the prompt to the person; the model is not called"
    result = app.session.history[-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert "doesn't want to proceed" in json.dumps(result["content"])
    assert [e.terminal_reason for e in recorded if isinstance(e, ev.QueryFinished)] == ["aborted_tools"]


async def test_write_allowed_with_y_writes_the_file(api, tmp_path):
    target, recorded, _ = await _answer_write_prompt(api, tmp_path, ["y"])
    assert target.read_text() == "hello\n"
    result = last_user_blocks(api.requests[1].body)[0]
    assert result["type"] == "tool_result" and not result.get("is_error")


async def test_allow_always_with_a_records_the_rule_and_the_next_call_runs_without_asking(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(
        reply(_write_call(target)),
        reply(text("Wrote it.")),
        reply(_write_call(target, "hello again\n")),
        reply(text("Wrote it again.")),
    )
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "write the notes")
        prompt = app.query_one(PermissionPrompt)
        await wait_until(pilot, lambda: prompt.current is not None)
        rule = prompt.current.suggested_rule
        assert rule and f"don't ask again for {rule}" in screen_text(app)
        await wait_armed(pilot, app, always=True)
        await pilot.press("a")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await type_prompt(pilot, "write them again")
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, app)
    assert target.read_text() == "hello again\n"
    assert sum(isinstance(e, ev.PermissionRequested) for e in recorded) == 1
    assert rule in app.session.policy.allow
    settings = json.loads((tmp_path / ".agent-tui" / "settings.local.json").read_text())
    assert rule in settings["permissions"]["allow"]


async def test_reject_with_feedback_e_sends_the_typed_message(api, tmp_path):
    target, recorded, _ = await _answer_write_prompt(api, tmp_path, ["e", *"use tabs instead", "enter"])
    assert not target.exists()
    result = last_user_blocks(api.requests[1].body)[0]
    assert result["is_error"] is True
    assert "use tabs instead" in json.dumps(result["content"])
    resolved = [e for e in recorded if isinstance(e, ev.PermissionResolved)]
    assert resolved[0].behavior == "deny" and resolved[0].feedback == "use tabs instead"


async def test_escape_during_a_stream_closes_the_connection_and_the_next_prompt_works(api, tmp_path):
    partial = reply(text("This answer starts streaming and then the server stalls forever"), chunk=6)
    api.push(hang(after=8, of=partial), reply(text("A normal second answer.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "start")
        await wait_until(pilot, lambda: "This answer starts" in screen_text(app))
        await pilot.press("escape")
        # The server never ends this stream: only the client closing it ends the wait.
        assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert "Interrupted" in screen_text(app)
        assert any(isinstance(e, ev.Interrupted) for e in recorded)

        await type_prompt(pilot, "go on")
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, app)
        assert "A normal second answer." in screen_text(app)
    assert check_history(api.requests[1].body["messages"]) == []
    assert check_history(app.session.history) == []


async def test_escape_when_idle_does_nothing(api, tmp_path):
    app, recorded = make_app(api, tmp_path)
    async with app.run_test() as pilot:
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert app.is_running
        assert not any(isinstance(e, ev.Interrupted) for e in recorded)


async def test_ctrl_c_twice_quits(api, tmp_path):
    """Twice within two seconds of the app's clock (a loaded machine's slow keys never count)."""
    app, _ = make_app(api, tmp_path)
    now = [100.0]
    app.clock = lambda: now[0]
    async with app.run_test() as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        now[0] += 2.5  # too late: this one only arms it again
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        now[0] += 1.5
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_ctrl_q_quits(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test() as pilot:
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_prompt_typed_during_a_turn_is_queued_and_sent_after(api, tmp_path):
    first, gate = gated(reply(text("first answer, held until the second prompt is queued")))
    api.push(first, reply(text("second answer")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "first")
        await wait_until(pilot, lambda: app.session.running)
        await type_prompt(pilot, "second")
        await wait_until(pilot, lambda: "queued: second" in screen_text(app))
        assert len(api.requests) == 1
        gate.set()
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, app)
        assert "queued:" not in screen_text(app)
    assert len(api.requests) == 2
    assert last_user_blocks(api.requests[1].body)[-1]["text"] == "second"
    users = [e.text for e in recorded if isinstance(e, ev.UserMessage)]
    assert users == ["first", "second"]


async def test_at_mention_attaches_the_file_as_a_read(api, tmp_path):
    (tmp_path / "notes.md").write_text("alpha\nbeta\n")
    api.push(reply(text("Two lines.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.press(*"summarize @not")
        assert "@notes.md" in screen_text(app)  # the completion menu
        await pilot.press("tab", "enter")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert "@notes.md attached" in screen_text(app)
    blocks = last_user_blocks(api.requests[0].body)
    texts = [b["text"] for b in blocks]
    assert texts[0].startswith("Called the Read tool with the following input:")
    assert str(tmp_path / "notes.md") in texts[0]
    assert "alpha" in texts[1] and "beta" in texts[1]
    assert texts[-1] == "summarize @notes.md "


async def test_slash_completion_and_help(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.press("/", "h")
        assert "/help" in screen_text(app)
        await pilot.press("tab")
        assert app.prompt_input.text == "/help "
        await pilot.press("enter")
        # Taller than the view: it shows from its first line; End goes to its last.
        await wait_until(pilot, lambda: "Keys" in screen_text(app))
        await pilot.press("end")
        await wait_until(pilot, lambda: "/exit — Quit agent-tui" in screen_text(app))
        assert "/permissions — Mode and rules" in screen_text(app)
    assert api.requests == []


async def test_up_recalls_the_previous_prompt(api, tmp_path):
    api.push(reply(text("ok")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test() as pilot:
        await type_prompt(pilot, "remember me")
        await wait_until(pilot, finished(recorded))
        await pilot.press("up")
        assert app.prompt_input.text == "remember me"
        await pilot.press("down")
        assert app.prompt_input.text == ""


async def test_shift_enter_and_ctrl_j_insert_newlines(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test() as pilot:
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.prompt_input.text == "a\nb\nc"
    assert api.requests == []


async def test_shift_tab_cycles_the_permission_mode(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.press("shift+tab")
        assert app.session.policy.mode == "acceptEdits"
        assert "accept edits" in screen_text(app)
        await pilot.press("shift+tab", "shift+tab")
        assert app.session.policy.mode == "default"


async def _a_turn_on_a_wide_screen(pilot, app, recorded) -> None:
    """One finished turn at a width that gives the timeline its pane (before a turn nothing shows)."""
    await type_prompt(pilot, "hello")
    await wait_until(pilot, finished(recorded))
    await settle(pilot, app)
    assert app.timeline.display


async def test_ctrl_t_toggles_the_timeline(api, tmp_path):
    api.push(reply(text("Hi.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await _a_turn_on_a_wide_screen(pilot, app, recorded)
        await pilot.press("ctrl+t")
        assert not app.timeline.display
        await pilot.press("ctrl+t")
        assert app.timeline.display


async def test_ctrl_o_expands_the_latest_tool_output(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "printf 'WORD%d\\n' 1 2"})), reply(text("Ran it.")))
    app, recorded = make_app(api, tmp_path, allow=["Bash(printf:*)"])
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "run echo")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        # The row ends with the last line (WORD2); the output before it shows once expanded.
        assert "WORD1" not in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause(0.1)
        assert "WORD1" in screen_text(app)


async def test_thinking_streams_into_a_dimmed_collapsed_line_that_ctrl_o_expands(api, tmp_path):
    api.push(reply(thinking("First check the PLAN-NOTE, then answer.", "sig-1"), text("The answer."), chunk=6))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "think first")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "✻ Thought" in shown and "The answer." in shown
        assert "PLAN-NOTE" not in shown
        block = app.transcript.query_one(ThinkingBlock)
        answer = app.transcript.query_one(AssistantText)
        assert block.rich_style.color != answer.rich_style.color  # dimmed next to the answer
        await pilot.press("ctrl+o")
        await pilot.pause(0.1)
        assert "First check the PLAN-NOTE, then answer." in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause(0.1)
        assert "PLAN-NOTE" not in screen_text(app)
    # The thinking block goes back to the model with its signature.
    assert app.session.history[1]["content"][0] == {
        "type": "thinking", "thinking": "First check the PLAN-NOTE, then answer.", "signature": "sig-1"}


async def test_keymap_remaps_a_binding(api, tmp_path):
    api.push(reply(text("Hi.")))
    app, recorded = make_app(api, tmp_path, keymap={"app.toggle_timeline": "f2"})
    async with app.run_test(size=(160, 40)) as pilot:
        await _a_turn_on_a_wide_screen(pilot, app, recorded)
        await pilot.press("f2")
        assert not app.timeline.display


async def test_help_lists_a_remapped_key_under_its_new_name(api, tmp_path):
    app, _ = make_app(api, tmp_path, keymap={"app.toggle_timeline": "f2", "input.newline": "ctrl+n"})
    async with app.run_test(size=(120, 40)) as pilot:
        await type_prompt(pilot, "/help")
        await wait_until(pilot, lambda: "Keys" in screen_text(app))
        await pilot.press("end")
        await wait_until(pilot, lambda: "/exit — Quit agent-tui" in screen_text(app))
        help_text = app.transcript.query(FrozenMarkdown).last().source
        # One line a key: "- `KEYS` what they do".
        rows = dict(line[3:].split("` ", 1) for line in help_text.splitlines() if line.startswith("- `"))
        assert rows["F2"].startswith("show / hide the timeline")
        assert rows["Ctrl+N"].startswith("newline")
        assert "Ctrl+T" not in rows and "Shift+Enter, Ctrl+J" not in rows
        assert rows["Shift+Tab"] == "permission mode"  # keys nobody remapped keep theirs


async def test_the_command_palette_names_the_remapped_key(api, tmp_path):
    app, _ = make_app(api, tmp_path, keymap={"app.toggle_timeline": "f2"})
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause(0.1)
        await pilot.press(*"toggle timeline")
        await wait_until(pilot, lambda: "Show or hide the tool timeline (F2)" in screen_text(app))


async def test_command_palette_runs_an_app_command(api, tmp_path):
    api.push(reply(text("Hi.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await _a_turn_on_a_wide_screen(pilot, app, recorded)
        await pilot.press("ctrl+p")
        await pilot.pause(0.1)
        await pilot.press(*"toggle timeline")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert not app.timeline.display


async def test_theme_flag_and_theme_command(api, tmp_path):
    app, _ = make_app(api, tmp_path, theme="agent-light")
    async with app.run_test() as pilot:
        assert app.theme == "agent-light"
        await type_prompt(pilot, "/theme agent-high-contrast")
        assert app.theme == "agent-high-contrast"


async def test_transcript_screen_shows_the_whole_history(api, tmp_path):
    api.push(reply(text("An answer worth keeping.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "hello")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await type_prompt(pilot, "/transcript")
        await pilot.pause(0.1)
        assert "An answer worth keeping." in screen_text(app)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert app.focused is app.prompt_input or app.screen is app.screen_stack[0]


async def test_offline_model_is_named_in_the_header(tmp_path):
    from agent_tui.engine.models.demo.model import DemoModel
    from agent_tui.engine.session import Session
    from agent_tui.tools.registry import default_tools
    from agent_tui.tui.app import AgentApp

    app = AgentApp(Session(model=DemoModel(speed=0), tools=default_tools(), cwd=tmp_path))
    async with app.run_test(size=(120, 24)):
        header = screen_text(app).splitlines()[0]
        assert "demo (offline)" in header and "no API key" in header


async def test_text_of_a_failed_attempt_is_removed_from_the_transcript(api, tmp_path):
    draft = reply(text("A first draft that the server never finishes because"), chunk=4)
    api.push(sse_error("api_error", "Internal server error", after=8, of=draft), reply(text("The clean answer.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "answer me")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "The clean answer." in shown
        assert "A first" not in shown
        # A retry that worked leaves nothing behind: no notice, one timeline row for the turn.
        assert "retrying" not in shown and not app.query_one("#activity").display
        assert [turn.number for turn in app.timeline._turns] == [1]
    [discarded] = [e for e in recorded if isinstance(e, ev.AttemptDiscarded)]
    assert (discarded.turn, discarded.attempt, discarded.reason) == (1, 1, "retry")
