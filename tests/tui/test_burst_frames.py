"""What a tool burst costs the screen, and keys typed meanwhile (docs/architecture.md §8): a
row placed by a layout asks for no second one, the hidden timeline pane asks for none at all,
a typed character is drawn without waiting for the screen's next update, and the garbage
collector is paced for frames.
"""

from __future__ import annotations

import gc

from textual.screen import Screen

from agent_tui.tui import collector
from agent_tui.tui.widgets.timeline import Timeline
from agent_tui.tui.widgets.tool_call import ToolCall, ToolSummary
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, wait_until


async def test_a_burst_asks_no_layout_of_its_placed_rows_nor_of_the_hidden_pane(api, tmp_path, monkeypatch):
    for n in range(12):
        (tmp_path / f"f{n:02d}.py").write_text("x = 1\n")
    calls = [tool_use("Read", {"file_path": str(tmp_path / f"f{n:02d}.py")}, id=f"toolu_read{n:02d}") for n in range(12)]
    api.push(reply(*calls[:6]), reply(*calls[6:]), reply(text("Twelve files read.")))
    app, recorded = make_app(api, tmp_path)
    asked: list[object] = []
    original = Screen._on_layout

    async def recording(self, message):
        asked.append(message.widget)
        await original(self, message)

    monkeypatch.setattr(Screen, "_on_layout", recording)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(*"read them", "enter")
        await wait_until(pilot, finished(recorded))
        await wait_until(pilot, lambda: "Twelve files read." in screen_text(app))
        assert not app.timeline.display, "at 100 columns the strip shows, not the pane"
        rows = [row for row in app.transcript.entries if isinstance(row, ToolCall)]
        assert len(rows) == 12
        # A row asks for a layout as it mounts its summary line, and never again: its first size
        # comes from the layout that placed it.
        assert not [w for w in asked if isinstance(w, ToolSummary)]
        assert len([w for w in asked if isinstance(w, ToolCall)]) <= len(rows)
        assert not [w for w in asked if isinstance(w, Timeline)]
        # The pane took every row in as data all the same (the burst's last rows within 0.1 s), and
        # shows them once the terminal is wide.
        await wait_until(pilot, lambda: app.timeline.virtual_size.height == app.timeline.line_count, timeout=5)
        await pilot.resize_terminal(160, 40)
        await pilot.pause(0.2)
        assert app.timeline.display
        shown = screen_text(app)
        assert all(f"f{n:02d}.py" in shown for n in range(12))


async def test_a_typed_character_is_drawn_without_the_screens_update(api, tmp_path, monkeypatch):
    """As if a layout of the whole screen (rows of a burst) kept the screen's update busy."""
    app, _ = make_app(api, tmp_path)
    busy = False
    update = Screen._on_timer_update

    def screen_update(self):
        if not busy:
            update(self)

    # (Before the screen makes its update timer, which keeps the method it was given.)
    monkeypatch.setattr(Screen, "_on_timer_update", screen_update)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        written: list[str] = []
        display = app._display

        def recording(screen, update):
            if update is not None:
                written.append(update.render_segments(app.console))
            display(screen, update)

        monkeypatch.setattr(app, "_display", recording)
        busy = True
        await pilot.press("ж")
        await wait_until(pilot, lambda: any("ж" in w for w in written), timeout=5)
        assert app.prompt_input.text == "ж"
        await pilot.press("a")
        await wait_until(pilot, lambda: app.prompt_input.text == "жa")
        # A deletion is drawn as at once (the line drawn again, without the "a").
        drawn = len(written)
        await pilot.press("backspace")
        await wait_until(pilot, lambda: any("ж" in w and "жa" not in w for w in written[drawn:]), timeout=5)
        assert app.prompt_input.text == "ж"


def test_the_collector_is_paced_for_frames_and_start_up_frozen_once():
    before = gc.get_threshold()
    try:
        # An app run in a test's process freezes nothing: the process outlives it.
        assert not collector.freeze_start_up()
        collector.pace()
        assert gc.get_threshold() == (collector.YOUNG, before[1], before[2])
        assert collector.freeze_start_up()
        assert gc.get_freeze_count() > 0
        assert not collector.freeze_start_up()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
