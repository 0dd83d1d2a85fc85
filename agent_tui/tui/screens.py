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


class McpApprovalScreen(ModalScreen[str]):
    """Ask once whether the project's `.mcp.json` servers may run (Claude Code asks the same).

    Dismissed with "all" (these and every later server of this project), "approve"
    (these servers) or "reject"; the app records the answer in the local settings.
    """

    BINDINGS = [
        Binding("a", "answer('all')", "Use all, now and later", id="mcp_approval.all"),
        Binding("y", "answer('approve')", "Use these", id="mcp_approval.approve"),
        Binding("n,escape", "answer('reject')", "Don't use", id="mcp_approval.reject"),
    ]

    def __init__(self, servers: dict[str, dict]) -> None:
        super().__init__()
        self.servers = servers

    def compose(self) -> ComposeResult:
        lines = [f"New MCP server{'s' if len(self.servers) > 1 else ''} found in .mcp.json:", ""]
        for name, entry in self.servers.items():
            target = entry.get("url") or " ".join([str(entry.get("command", "")), *map(str, entry.get("args", []))])
            lines.append(f"  • {name}  {target.strip()}")
        lines += [
            "",
            "MCP servers run programs and may reach data and services on your behalf.",
            "",
            "  a  use these and all future MCP servers in this project",
            "  y  use these MCP servers",
            "  n  continue without them",
        ]
        yield Static("\n".join(lines), id="mcp-approval-text", markup=False)
        yield Footer()

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice)
