"""The gauge line: context used against the window, the auto-compact mark,
output tokens of the running turn, turn count, elapsed time, activity."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from ..state import format_seconds, format_tokens

BAR_CELLS = 20
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# Fractions of the auto-compact threshold where the colour rises.
WARN_AT = 0.70
ALERT_AT = 0.90

ACTIVITY = {
    "idle": "ready",
    "waiting": "waiting for the model",
    "streaming": "streaming",
    "tools": "running tools",
    "permission": "awaiting permission",
    "compacting": "compacting",
}


def level(used: int, threshold: int) -> str:
    """"ok", "warning" or "error" by how close `used` is to the threshold."""
    if threshold <= 0:
        return "ok"
    fraction = used / threshold
    return "error" if fraction >= ALERT_AT else "warning" if fraction >= WARN_AT else "ok"


class Gauge(Widget):
    context_tokens: reactive[int] = reactive(0)
    context_window: reactive[int] = reactive(200_000)
    threshold: reactive[int] = reactive(167_000)
    output_tokens: reactive[int] = reactive(0)
    turns: reactive[int] = reactive(0)
    activity: reactive[str] = reactive("idle")

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.started_at: float | None = None
        self.finished_at: float | None = None

    def start(self) -> None:
        self.started_at = self.clock()
        self.finished_at = None
        self.output_tokens = 0
        self.turns = 0

    def stop(self) -> None:
        self.finished_at = self.clock()
        self.activity = "idle"

    def watch_context_tokens(self, tokens: int) -> None:
        for name in ("ok", "warning", "error"):
            self.set_class(level(tokens, self.threshold) == name, f"-{name}")

    def _bar(self) -> list[tuple[str, str]]:
        window = max(self.context_window, 1)
        used = min(self.context_tokens / window, 1.0)
        mark = min(int(self.threshold / window * BAR_CELLS), BAR_CELLS - 1)
        filled = round(used * BAR_CELLS)
        style = {"ok": "$text-success", "warning": "$text-warning", "error": "$text-error"}[
            level(self.context_tokens, self.threshold)
        ]
        cells: list[tuple[str, str]] = []
        for i in range(BAR_CELLS):
            if i == mark:
                cells.append(("┃", "$text-warning bold" if i < filled else "$text-muted bold"))
            elif i < filled:
                cells.append(("▰", style))
            else:
                cells.append(("▱", "$text-muted"))
        return cells

    def render(self) -> Content:
        window = max(self.context_window, 1)
        lvl = level(self.context_tokens, self.threshold)
        pct_style = {"ok": "", "warning": "$text-warning bold", "error": "$text-error bold"}[lvl]
        sep = ("  ·  ", "$foreground-muted")
        parts: list[tuple[str, str] | str] = [("context ", "$text-muted"), *self._bar()]
        parts += [" ", (f"{self.context_tokens * 100 // window}%", pct_style)]
        parts += [sep, (f"{format_tokens(self.context_tokens)}/{format_tokens(window)}", "")]
        parts += [sep, (f"compacts at {self.threshold * 100 // window}%", "$text-muted")]
        if self.started_at is not None:
            parts += [sep, (f"↓{format_tokens(self.output_tokens)} out", "")]
            parts += [sep, (f"turn {self.turns}", "")]
            end = self.finished_at if self.finished_at is not None else self.clock()
            parts += [sep, (format_seconds(max(0.0, end - self.started_at)), "")]
        parts.append(sep)
        if self.activity == "idle":
            parts.append(("● ready", "$text-success"))
        else:
            frame = SPINNER[int(self.clock() * 10) % len(SPINNER)]
            style = "$text-warning bold" if self.activity == "permission" else "$text-accent"
            parts.append((f"{frame} {ACTIVITY.get(self.activity, self.activity)}", style))
        content = Content.assemble(*parts)
        if content.cell_length > self.size.width > 0:
            # Narrow terminal: drop the figures a person can do without, keep the bar and activity.
            short = [("ctx ", "$text-muted"), *self._bar(), " ", (f"{self.context_tokens * 100 // window}%", pct_style)]
            if self.started_at is not None:
                short += [sep, (f"↓{format_tokens(self.output_tokens)}", ""), sep, (f"t{self.turns}", "")]
            short += [sep, parts[-1]]
            content = Content.assemble(*short)
        return content
