"""The one-line header: model · working directory · permission mode · session."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from ...paths import shown_path
from ..safe_text import terminal_safe

MODE_LABELS = {
    "default": "ask before changes",
    "acceptEdits": "accept edits",
    "plan": "plan mode",
    "bypassPermissions": "bypass permissions",
    "dontAsk": "don't ask (deny)",
}
# What each mode means, said when Shift+Tab changes to it.
MODE_MEANINGS = {
    "default": "changes ask first",
    "acceptEdits": "file edits in the project run without asking",
    "plan": "read and plan only; nothing is changed",
    "bypassPermissions": "everything runs without asking",
    "dontAsk": "what would ask is refused",
}


class SessionHeader(Widget):
    model_label: reactive[str] = reactive("")
    offline: reactive[bool] = reactive(False)
    offline_requested: reactive[bool] = reactive(False)
    cwd: reactive[str] = reactive("")
    mode: reactive[str] = reactive("default")
    session_id: reactive[str] = reactive("")

    def render(self) -> Content:
        if self.offline:
            model = Content.assemble(
                ("◆ ", "$warning"),
                (terminal_safe(self.model_label), "bold"),
                (
                    " — --offline, the demo model answers"
                    if self.offline_requested
                    else " — no API key, the demo model answers",
                    "$text-warning",
                ),
            )
        else:
            model = Content.assemble(("◆ ", "$primary"), (terminal_safe(self.model_label), "bold"))
        mode_style = "$text-warning" if self.mode in ("acceptEdits", "bypassPermissions") else "$text-accent"
        if self.mode == "plan":
            mode_style = "$text-success"
        return Content.assemble(
            model,
            ("  ·  ", "$foreground-muted"),
            (terminal_safe(shown_path(self.cwd)), "$text-secondary"),
            ("  ·  ", "$foreground-muted"),
            (f"⏵ {MODE_LABELS.get(self.mode, self.mode)}", mode_style),
            ("  ·  ", "$foreground-muted"),
            (f"session {self.session_id[:8]}", "$foreground-muted"),
        )
