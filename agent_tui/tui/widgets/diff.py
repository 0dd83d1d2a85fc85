"""A unified diff, coloured with the theme's success / error tints."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

MAX_LINES = 400


def diff_content(diff: str, max_lines: int = MAX_LINES) -> Content:
    lines = diff.rstrip("\n").split("\n")
    shown = lines[:max_lines]
    out: list[Content] = []
    for line in shown:
        if line.startswith(("+++", "---")):
            out.append(Content.styled(line, "$text-muted bold"))
        elif line.startswith("@@"):
            out.append(Content.styled(line, "$text-accent"))
        elif line.startswith("+"):
            out.append(Content.styled(line, "$text-success on $success-muted"))
        elif line.startswith("-"):
            out.append(Content.styled(line, "$text-error on $error-muted"))
        else:
            out.append(Content(line))
    if len(lines) > max_lines:
        out.append(Content.styled(f"… {len(lines) - max_lines} more diff lines", "$text-muted italic"))
    return Content("\n").join(out)


def diff_stats(diff: str) -> tuple[int, int]:
    """(lines added, lines removed)."""
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class DiffView(Static):
    def __init__(self, diff: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(diff_content(diff) if diff else "", id=id, classes=classes, markup=False)

    def show_diff(self, diff: str) -> None:
        self.update(diff_content(diff))
