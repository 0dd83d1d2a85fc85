"""An entry of the transcript that grows because something inside it changed (a tool row's
diff mounted, its summary redrawn) is measured again even when an entry below it changed in
the same frame: the stream layout keeps the placements above the first entry the screen lists
as changed, and the screen lists only the entry whose own request came first
(`widgets/transcript.py`, docs/architecture.md §8)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from agent_tui.tui.widgets.transcript import Transcript


class Row(Vertical):
    """An entry with children, like a tool row: as tall as what it holds."""

    DEFAULT_CSS = "Row { height: auto; }"


class TranscriptApp(App[None]):
    CSS = "Transcript { layout: stream; height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")

    async def on_mount(self) -> None:
        self.row = Row(Static("summary", id="inside"))
        self.answer = Static("the answer", id="answer")
        await self.query_one(Transcript).add(self.row, self.answer)


async def test_an_entry_grown_from_inside_keeps_its_height_when_a_later_entry_changes_too(monkeypatch):
    app = TranscriptApp()
    frames: list[tuple[int, int]] = []  # (the row's height, lines between the row and the answer)
    original = Screen._refresh_layout

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if getattr(app, "answer", None) is not None and app.answer.is_mounted:
            frames.append((app.row.region.height, app.answer.region.y - app.row.region.bottom))

    monkeypatch.setattr(Screen, "_refresh_layout", recording)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        assert app.row.region.height == 1
        frames.clear()
        # One frame: the row's child grows to 4 lines and the entry after the row changes.
        app.row.query_one("#inside", Static).update("summary\ndiff 1\ndiff 2\ndiff 3")
        app.answer.update("the answer, streamed on")
        await pilot.pause(0.2)
        # Every frame laid out since (the first one included) has the row at its 4 lines, the answer right below it.
        assert frames, "no layout pass ran"
        assert frames == [(4, 0)] * len(frames)
