"""Everyday use: scrolling and copying, Markdown that fits the pane, and the
small things a person notices (/export, /resume, /clear, /context, --offline,
`e` feedback, toasts)."""

from __future__ import annotations

import re

from textual import events
from textual.widgets import Static
from textual.widgets._toast import Toast

from agent_tui.engine import events as ev
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.models.demo.model import DemoModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.widgets.answer import AssistantText
from agent_tui.tui.widgets.markdown_lite import render_markdown
from tests.loopback import hang, reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until

LONG_ANSWER = "\n\n".join(f"Paragraph {n}: " + "some words " * 12 for n in range(40))
LONG_CODE = "def f():\n    return compute(argument_one, argument_two, argument_three, argument_four, TAIL_MARK)\n"
TABLE = "| name | mid | size |\n|:-----|:---:|-----:|\n| a | b | 7 |\n| longer | middle | 12345 |\n"


async def _long_transcript(api, tmp_path, size=(80, 24)):
    api.push(reply(text(LONG_ANSWER), chunk=4000))
    app, recorded = make_app(api, tmp_path)
    return app, recorded


# ---------------------------------------------------------------- scrolling and copying


async def test_page_up_and_down_scroll_the_transcript_from_the_input(api, tmp_path):
    app, recorded = await _long_transcript(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        transcript = app.transcript
        bottom = transcript.scroll_y
        assert bottom == transcript.max_scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause(0.05)
        assert transcript.scroll_y < bottom
        assert app.focused is app.prompt_input
        await pilot.press("pagedown", "pagedown")
        await pilot.pause(0.05)
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_home_and_end_scroll_to_the_top_and_bottom_when_nothing_is_typed(api, tmp_path):
    app, recorded = await _long_transcript(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await pilot.press("home")
        await pilot.pause(0.05)
        assert app.transcript.scroll_y == 0
        await pilot.press("end")
        await pilot.pause(0.05)
        assert app.transcript.scroll_y == app.transcript.max_scroll_y

        # With text in the input, Home and End move the cursor as usual.
        await pilot.press(*"abc", "home")
        assert app.prompt_input.cursor_location == (0, 0)
        assert app.transcript.scroll_y == app.transcript.max_scroll_y


async def test_the_mouse_wheel_scrolls_back_and_a_stream_does_not_pull_the_view_down(api, tmp_path):
    whole = reply(text(LONG_ANSWER), chunk=4000)
    # All the text, then the stream stays open.
    api.push(hang(after=len(whole.events) - 2, of=whole))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, lambda: "Paragraph 39" in screen_text(app))
        transcript = app.transcript
        for _ in range(5):
            transcript.post_message(events.MouseScrollUp(transcript, 2, 2, 0, -1, 0, False, False, False))
        await pilot.pause(0.05)
        assert transcript.scroll_y < transcript.max_scroll_y
        # What the view shows (entries far above it may be unmounted meanwhile, moving scroll_y but not the text).
        held = screen_text(app).splitlines()[1:12]
        app.say("something new arrives below")
        await pilot.pause(0.1)
        assert screen_text(app).splitlines()[1:12] == held
        app.session.abort()


async def test_ctrl_c_copies_selected_text_with_osc_52_instead_of_stopping(api, tmp_path):
    api.push(reply(text("Copy this sentence, please.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "say something")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        note = app.query("#transcript .user-prompt").last(Static)
        note.text_select_all()
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.clipboard == "› say something"
        assert app.is_running
        # The answer's text too, as laid out (it is drawn by agent-tui's own Markdown renderer).
        app.transcript.query(AssistantText).last().text_select_all()
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.clipboard == "Copy this sentence, please."
        # Nothing selected any more: Ctrl+C is Stop / quit again.
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert "Press Ctrl+C again to quit." in [n.message for n in app._notifications]


# ---------------------------------------------------------------- Markdown that fits the pane


async def test_a_long_code_line_wraps_instead_of_being_cut(api, tmp_path):
    api.push(reply(text("Here:\n\n```python\n" + LONG_CODE + "```\n")), reply(text("Next.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 30)) as pilot:
        await type_prompt(pilot, "show code")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert "TAIL_MARK" in screen_text(app)  # the live widget
        await type_prompt(pilot, "next")
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, app)
        assert "TAIL_MARK" in screen_text(app)  # frozen once the next prompt starts


def test_a_finished_table_follows_its_alignment_row():
    lines = render_markdown(TABLE).plain.splitlines()
    assert lines[0] == "name   │  mid   │  size"
    assert lines[2] == "a      │   b    │     7"
    assert lines[3] == "longer │ middle │ 12345"


async def test_a_streamed_table_follows_its_alignment_row(api, tmp_path):
    api.push(reply(text(TABLE)))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "table")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await pilot.pause(0.1)
        # Cells are separated by "│" (two per row here; at 100 columns the timeline is a strip, not a pane).
        rows = {line.split("│")[0].strip(): line for line in screen_text(app).splitlines() if line.count("│") >= 2}
        a_row, long_row = rows["a"], rows["longer"]
        # Right-aligned: both numbers end in the same column; centred: "b" sits mid-cell.
        assert a_row.index("7") == long_row.index("12345") + 4
        b_cell = a_row.split("│")[1]
        assert 1 < b_cell.index("b") < len(b_cell) - 2


# ---------------------------------------------------------------- commands and messages


async def test_export_puts_each_reply_under_its_speaker_and_folds_attachments(api, tmp_path):
    (tmp_path / "notes.md").write_text("alpha\n")
    api.push(reply(text("It says alpha.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "summarize @notes.md")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await type_prompt(pilot, "/export out.md")
        await wait_until(pilot, lambda: (tmp_path / "out.md").exists())
    exported = (tmp_path / "out.md").read_text()
    sections = re.split(r"^## ", exported, flags=re.M)[1:]
    assert [s.splitlines()[0] for s in sections] == ["› User", "Assistant"]
    assert f"⎿ attached @{tmp_path / 'notes.md'}" in sections[0]
    assert "summarize @notes.md" in sections[0] and "Called the Read tool" not in exported
    assert "It says alpha." in sections[1]


async def test_a_prompt_with_an_attachment_is_recorded_as_typed(api, tmp_path):
    (tmp_path / "notes.md").write_text("alpha\n")
    api.push(reply(text("Read it.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "summarize @notes.md")
        await wait_until(pilot, finished(recorded))
    assert [e.text for e in recorded if isinstance(e, ev.UserMessage)] == ["summarize @notes.md"]


async def test_clear_shows_the_new_session_id_in_the_header(api, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "data"))
    api.push(reply(text("Hello.")))
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(),
        cwd=tmp_path,
        policy=PermissionPolicy(cwd=tmp_path),
        options=SessionOptions(persist=True),
    )
    first = session.session_id
    app = AgentApp(session)
    async with app.run_test(size=(240, 30)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, lambda: not session.running and len(session.history) == 2)
        await type_prompt(pilot, "/clear")
        await wait_until(pilot, lambda: "Conversation cleared." in screen_text(app))
        assert session.session_id != first
        assert app.header.session_id == session.session_id
        assert f"session {session.session_id[:8]}" in screen_text(app)


async def test_context_rows_add_up_to_the_window(api, tmp_path):
    api.push(reply(text("hello"), usage={"input_tokens": 40}))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 40)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        breakdown = await app.session.context_breakdown()
        rows = dict(breakdown.rows())
        assert sum(rows.values()) == breakdown.window
        assert rows["Free space"] == breakdown.window - breakdown.total
        await type_prompt(pilot, "/context")
        await wait_until(pilot, lambda: "Auto-compact" in screen_text(app))
        assert f"Free space │ {rows['Free space']:,}" in re.sub(r" +", " ", screen_text(app))


async def test_offline_with_a_key_says_so_rather_than_that_no_key_is_set(tmp_path):
    session = Session(model=DemoModel(requested=True), tools=default_tools(), cwd=tmp_path)
    app = AgentApp(session)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        shown = screen_text(app)
        assert "--offline was given, so the offline demo model answers" in shown
        assert "No API key" not in shown and "no API key" not in shown


async def test_without_a_key_the_demo_model_says_no_key_is_set(tmp_path):
    session = Session(model=DemoModel(), tools=default_tools(), cwd=tmp_path)
    app = AgentApp(session)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        assert "No API key is set" in screen_text(app)


async def test_feedback_typed_after_e_shows_at_once_under_the_rejected_call(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(
        reply(tool_use("Write", {"file_path": str(target), "content": "x\n"}, id="toolu_write")),
        reply(text("Understood, tabs it is.")),
    )
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "write notes")
        await wait_until(pilot, lambda: app.permission.current is not None)
        await wait_armed(pilot, app)
        await pilot.press("e", *"use tabs instead", "enter")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        shown = screen_text(app)
        assert "you said: use tabs instead" in shown
        assert "Understood, tabs it is." in shown


async def test_toasts_keep_clear_of_the_input_box(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("A toast with a few words in it")
        await wait_until(pilot, lambda: bool(app.screen.query(Toast)))
        await pilot.pause(0.1)
        toast = app.screen.query(Toast).first()
        assert not toast.region.overlaps(app.prompt_input.region)
        assert not toast.region.overlaps(app.header.region)
