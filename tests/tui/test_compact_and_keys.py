"""`/compact` as a person sees it (a live status line, Esc cancels), and keys typed
in one burst doing exactly what was typed."""

from __future__ import annotations

import asyncio
import copy
import re

from textual import events

from agent_tui.engine import events as ev
from agent_tui.tui.widgets.transcript import Notice as NoticeRow
from tests.loopback import hang, reply, text

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_until

SUMMARY = "<summary>" + "The user asked for a greeting; it was given. " * 20 + "</summary>"


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _summary_that_stalls():
    whole = reply(text(SUMMARY), chunk=8)
    # Everything but content_block_stop, message_delta and message_stop: the summary never ends.
    return hang(after=len(whole.events) - 2, of=whole)


async def _one_exchange(pilot, app, recorded) -> None:
    await type_prompt(pilot, "say hello")
    await wait_until(pilot, finished(recorded))
    await settle(pilot, app)


async def test_compact_shows_a_live_line_with_the_time_and_the_tokens_written(api, tmp_path):
    api.push(reply(text("Hello!")), _summary_that_stalls())
    app, recorded = make_app(api, tmp_path)
    clock = ManualClock()
    app.clock = clock
    async with app.run_test(size=(100, 30)) as pilot:
        await _one_exchange(pilot, app, recorded)
        await type_prompt(pilot, "/compact")
        progress = lambda: [e for e in recorded if isinstance(e, ev.CompactionProgress)]  # noqa: E731
        await wait_until(pilot, lambda: app.conversation.compacting is not None and len(progress()) >= 5)
        await asyncio.to_thread(api.wait_requests, 2, 5.0)
        clock.now += 4.2
        await wait_until(pilot, lambda: "(4s" in screen_text(app))
        line = re.search(r"Compacting conversation… \((\d+)s · ↓(\d+) tokens\) · esc to interrupt", screen_text(app))
        assert line is not None, screen_text(app)
        assert line.group(1) == "4"
        assert int(line.group(2)) == app.conversation.compacting.output_tokens == progress()[-1].output_tokens > 0
        assert "compacting" in str(app.gauge.render())

        clock.now += 3.0
        await wait_until(pilot, lambda: "Compacting conversation… (7s" in screen_text(app))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.session.running)


async def test_escape_cancels_compact_and_leaves_the_history_unchanged(api, tmp_path):
    api.push(reply(text("Hello!")), _summary_that_stalls())
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _one_exchange(pilot, app, recorded)
        before = copy.deepcopy(app.session.history)
        await type_prompt(pilot, "/compact")
        await wait_until(pilot, lambda: any(isinstance(e, ev.CompactionProgress) for e in recorded))

        await pilot.press("escape")
        assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)
        await wait_until(pilot, lambda: app.conversation.compacting is None and not app.session.running)
        await pilot.pause(0.05)
        assert app.session.history == before
        shown = screen_text(app)
        assert "Compaction interrupted" in shown, shown
        assert "Compacting conversation…" not in shown
        assert not any(isinstance(e, ev.Compaction) for e in recorded)


async def test_ctrl_c_cancels_compact_too(api, tmp_path):
    api.push(reply(text("Hello!")), _summary_that_stalls())
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _one_exchange(pilot, app, recorded)
        before = copy.deepcopy(app.session.history)
        await type_prompt(pilot, "/compact")
        await wait_until(pilot, lambda: any(isinstance(e, ev.CompactionProgress) for e in recorded))
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: app.conversation.compacting is None and not app.session.running)
        assert app.is_running
        assert app.session.history == before


async def _compact_after_one_exchange(pilot, app, recorded) -> None:
    """One prompt answered, then `/compact`, until its result is in and its live line gone."""
    await _one_exchange(pilot, app, recorded)
    await type_prompt(pilot, "/compact")
    await wait_until(pilot, lambda: any(isinstance(e, ev.Compaction) for e in recorded))
    await wait_until(pilot, lambda: app.conversation.compacting is None)


async def test_a_finished_compact_hides_the_line_and_reports_the_result(api, tmp_path):
    api.push(reply(text("Hello!")), reply(text(SUMMARY)))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _compact_after_one_exchange(pilot, app, recorded)
        await pilot.pause(0.05)
        shown = screen_text(app)
        assert "Conversation compacted (manual)" in shown
        assert "Compacting conversation…" not in shown
    assert len(app.session.history) == 1


async def test_a_progress_event_arriving_after_compact_ended_leaves_no_live_line(api, tmp_path):
    """The bus delivers after `/compact`'s call has returned: a last progress event then must not
    put "Compacting conversation…" back up for good (a tmux burst of fifty commands left it there)."""
    api.push(reply(text("Hello!")), reply(text(SUMMARY)))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _compact_after_one_exchange(pilot, app, recorded)
        await app.replay([ev.CompactionProgress(trigger="manual", output_tokens=194)])
        await pilot.pause(0.05)
        assert app.conversation.compacting is None
        assert "Compacting conversation…" not in screen_text(app)
        # An automatic compaction inside a turn still shows its line from its first progress event.
        await app.replay([ev.CompactionProgress(trigger="auto", output_tokens=12)])
        assert app.conversation.compacting is not None


def _burst(app, keys: str | list[str]) -> None:
    """Every key of `keys` handed to the app at once, as a terminal delivers a paste or fast typing."""
    for key in keys:
        name = {"\r": "enter", "/": "slash", " ": "space", "-": "minus", ".": "full_stop"}.get(key, key)
        app._driver.send_message(events.Key(name, None if key == "\r" else key))


async def test_a_slash_command_typed_in_one_burst_runs_as_typed(api, tmp_path):
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        for n in range(10):
            _burst(app, f"/export out-{n}.md\r")
            await wait_until(pilot, lambda n=n: (tmp_path / f"out-{n}.md").exists())
        _burst(app, "/compact\r")
        # the session's answer, then its row in the transcript (which may sit below the visible part
        # when a loaded machine lets the view lag behind the ten exports' rows)
        await wait_until(pilot, lambda: any(
            isinstance(e, ev.Notice) and e.message == "Nothing to compact yet." for e in recorded))
        await wait_until(pilot, lambda: any("Nothing to compact yet." in str(row.render())
                                            for row in app.query(NoticeRow)))
        assert app.prompt_input.text == ""
    assert api.requests == []


async def test_enter_on_a_partly_typed_command_completes_it_without_running_another(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        _burst(app, "/comp\r")
        await wait_until(pilot, lambda: app.prompt_input.text == "/compact ")
        await pilot.pause(0.05)
        assert "Nothing to compact yet." not in screen_text(app)
