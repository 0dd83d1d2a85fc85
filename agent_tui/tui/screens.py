"""The full-transcript screen: the whole history as text, however long the session."""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea

from .widgets.permission import ALWAYS_SHOWN, ARM_QUIET


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

    # The permission prompt's timings: keys typed before the question was readable never approve it.
    arm_quiet: ClassVar[float] = ARM_QUIET
    always_shown: ClassVar[float] = ALWAYS_SHOWN

    def __init__(self, servers: dict[str, dict]) -> None:
        super().__init__()
        self.servers = servers
        self._shown_at = float("inf")
        self._armed = self._always_armed = False

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
        yield Static("arming…", id="mcp-approval-arming", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()
        self._arming = self.set_interval(0.05, self._arm)

    def _arm(self) -> None:
        """Arm once no key has been pressed for `arm_quiet` seconds since the question appeared
        (a key already typed must not approve servers that run programs); `a` needs `always_shown`."""
        now = time.monotonic()
        last_key = getattr(self.app, "last_key_at", float("-inf"))
        self._armed = self._armed or now >= max(self._shown_at, last_key) + self.arm_quiet
        self._always_armed = self._armed and now >= self._shown_at + self.always_shown
        if self._always_armed:
            self._arming.stop()
            self.query_one("#mcp-approval-arming").display = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters != ("reject",):
            return self._always_armed if parameters == ("all",) else self._armed
        return True

    def action_answer(self, choice: str) -> None:
        if choice != "reject" and not self.check_action("answer", (choice,)):
            return
        self.dismiss(choice)
