"""The full-transcript screen: the whole history as text, however long the session."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea


class TranscriptScreen(ModalScreen[None]):
    """A read-only, virtualised view (a TextArea draws only the visible lines)."""

    BINDINGS = [
        Binding("escape,q", "dismiss", "Close", id="transcript.close"),
        Binding("ctrl+s", "export", "Export", id="transcript.export"),
    ]

    def __init__(self, text: str, title: str) -> None:
        super().__init__()
        self._text = text
        self._title = title

    def compose(self) -> ComposeResult:
        yield Static(self._title, id="transcript-title", markup=False)
        yield TextArea(self._text, read_only=True, soft_wrap=True, id="transcript-text", highlight_cursor_line=False)
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)

    async def action_export(self) -> None:
        await self.app.run_action("export_transcript")
