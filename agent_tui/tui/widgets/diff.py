"""A unified diff whose removed and added lines stand apart at every colour depth.

The theme's error / success tints serve a truecolor terminal.  Fewer colours
would turn them into look-alike greys (light on grey at 16 colours, olive and
grey at 256), so those depths get colours that are exact entries of their own
palettes: the 256-colour cube's, and at 16 colours (8 too) ANSI colours 1 and
2 as text colours.  With `NO_COLOR` (or no colour at all) lines carry no
colour.  The `+` / `-` of each line stays in a gutter of its own, after the
line's number and repeated on the rows a long line wraps to, so the diff reads
without colour too.  The `---` / `+++` headers are not drawn (the prompt and the
tool row name the file); a `⋮` row parts two hunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.color import Color as TerminalColor
from textual.color import Color
from textual.content import Content
from textual.style import Style
from textual.visual import Visual
from textual.widgets import Static

from ..safe_text import reveal_hidden

if TYPE_CHECKING:
    from textual.app import App
    from textual.css.styles import RulesMap
    from textual.strip import Strip
    from textual.style import Style as VisualStyle
    from textual.visual import RenderOptions

MAX_LINES = 400


@dataclass(frozen=True)
class DiffPalette:
    """Styles for removed and added lines."""

    added: str | Style
    removed: str | Style


def _entry(number: int) -> Color:
    """Entry `number` of the terminal's 256-colour palette, as plain RGB: a terminal of that
    depth shows it as that entry (Textual would map an ANSI colour through its own theme)."""
    return Color(*TerminalColor.from_ansi(number).get_truecolor())


def _palette(added: tuple[int, int | None], removed: tuple[int, int | None]) -> DiffPalette:
    """A palette of (text, background) palette entries."""

    def style(text: int, background: int | None) -> Style:
        return Style(foreground=_entry(text), background=None if background is None else _entry(background))

    return DiffPalette(added=style(*added), removed=style(*removed))


THEME_TINTS = DiffPalette(added="$text-success on $success-muted", removed="$text-error on $error-muted")
# Cube entries: light text on a dark band, or dark text on a light band.
CUBE_ON_DARK = _palette(added=(114, 22), removed=(210, 52))
CUBE_ON_LIGHT = _palette(added=(22, 194), removed=(88, 224))
def _ansi_text(number: int) -> Style:
    """ANSI colour `number` (1-7) as a text colour, in about the shade xterm gives it (205 of 255,
    between Rich's default entry and its bright twin): still that colour at 16 colours."""
    return Style(foreground=_entry(number).blend(_entry(number + 8), 0.6))


# ANSI colours 2 and 1 as text colours: 8-colour terminals have them too.
ANSI_TEXT = DiffPalette(added=_ansi_text(2), removed=_ansi_text(1))
NO_COLOUR = DiffPalette(added="bold", removed="")


def diff_palette(app: App | None) -> DiffPalette:
    """The palette for the terminal `app` draws on (truecolor when there is none yet)."""
    if app is None:
        return THEME_TINTS
    system = app.console.color_system
    if app.no_color or system is None:
        return NO_COLOUR
    if system == "truecolor":
        return THEME_TINTS
    if system == "256":
        return CUBE_ON_DARK if app.current_theme.dark else CUBE_ON_LIGHT
    return ANSI_TEXT  # "standard" (16 or 8 colours) and "windows"


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk: its kind (`+`, `-`, ` `, `\\` for "no newline", `@` for the break
    between two hunks), its number in the file (the old file's for a removed line, the new
    file's otherwise) and its text without the sign."""

    kind: str
    number: int | None
    text: str


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_diff(diff: str) -> list[DiffLine]:
    """The hunks' lines of a one-file unified diff, numbered; the `---` / `+++` headers dropped
    (the prompt and the tool row name the file). Inside a hunk its counts say where it ends, so
    a removed line that reads `-- x` is never taken for a header."""
    out: list[DiffLine] = []
    old = new = old_left = new_left = 0
    for line in diff.rstrip("\n").split("\n") if diff else []:
        hunk = _HUNK.match(line) if old_left <= 0 and new_left <= 0 else None
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(3))
            old_left, new_left = (int(count) if count is not None else 1 for count in hunk.group(2, 4))
            if out:
                out.append(DiffLine("@", None, ""))
        elif line.startswith("\\"):
            out.append(DiffLine("\\", None, line))
        elif old_left <= 0 and new_left <= 0 and line.startswith(("--- ", "+++ ", "diff ", "index ")):
            continue  # a file header
        elif line.startswith("-"):
            out.append(DiffLine("-", old, line[1:]))
            old, old_left = old + 1, old_left - 1
        elif line.startswith("+"):
            out.append(DiffLine("+", new, line[1:]))
            new, new_left = new + 1, new_left - 1
        else:
            out.append(DiffLine(" ", new, line[1:]))
            old, new, old_left, new_left = old + 1, new + 1, old_left - 1, new_left - 1
    return out


def from_first_change(lines: list[DiffLine]) -> list[DiffLine]:
    """`lines` from the first added or removed one: what a prompt's few rows should show first."""
    first = next((i for i, line in enumerate(lines) if line.kind in "+-"), 0)
    return lines[first:]


def _diff_lines(diff: str, palette: DiffPalette, max_lines: int, *, start_at_change: bool = False
                ) -> list[tuple[Content, int]]:
    """(row, gutter width) pairs: the gutter is the line's number and its `+` / `-` / ` `,
    repeated on the rows a long line wraps to."""
    lines = parse_diff(diff)
    if start_at_change:
        lines = from_first_change(lines)
    width = len(str(max((line.number or 0 for line in lines), default=0)))
    out: list[tuple[Content, int]] = []
    for line in lines[:max_lines]:
        number = Content.styled(f"{line.number:>{width}} " if line.number is not None else " " * (width + 1),
                                "$text-muted")
        if line.kind == "@":
            out.append((number + Content.styled("⋮", "$text-muted"), 0))
        elif line.kind == "\\":
            out.append((number + Content.styled(line.text, "$text-muted italic"), 0))
        elif line.kind in "+-":
            # Bidi and zero-width characters drawn as tokens: nothing reorders or hides the code.
            style = palette.added if line.kind == "+" else palette.removed
            out.append((number + reveal_hidden(line.kind + line.text, style), width + 2))
        else:
            out.append((number + reveal_hidden(" " + line.text), width + 2))
    if len(lines) > max_lines:
        out.append((Content.styled(f"… {len(lines) - max_lines} more diff lines", "$text-muted italic"), 0))
    return out


class DiffVisual(Visual):
    """Diff lines wrapped at the width they are drawn at, each wrapped row behind its line's gutter."""

    def __init__(self, lines: list[tuple[Content, int]]) -> None:
        self._lines = lines
        self._layout: tuple[int, Content, int] | None = None  # (width, lines, how many)

    def _rows(self, width: int) -> list[Content]:
        rows: list[Content] = []
        for line, gutter in self._lines:
            if line.cell_length <= width:
                rows.append(line)
            elif not gutter:
                rows += line.wrap(max(width, 1))
            else:
                # The number on the first row only; the sign on every row.
                first, sign = line[:gutter], Content(" " * (gutter - 1)) + line[gutter - 1:gutter]
                parts = line[gutter:].wrap(max(width - gutter, 1))
                rows += [(sign if i else first) + part for i, part in enumerate(parts)]
        return rows

    def _laid_out(self, width: int) -> tuple[int, Content, int]:
        if self._layout is None or self._layout[0] != width:
            rows = self._rows(width)
            self._layout = (width, Content("\n").join(rows), len(rows))
        return self._layout

    @property
    def plain(self) -> str:
        return Content("\n").join(self._rows(1 << 20)).plain

    def render_strips(self, width: int, height: int | None, style: VisualStyle, options: RenderOptions) -> list[Strip]:
        return self._laid_out(width)[1].render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max((line.cell_length for line, _ in self._lines), default=0)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self._laid_out(width)[2]


def diff_stats(diff: str) -> tuple[int, int]:
    """(lines added, lines removed)."""
    kinds = [line.kind for line in parse_diff(diff)]
    return kinds.count("+"), kinds.count("-")


class DiffView(Static):
    """A diff's numbered lines; `start_at_change`: from its first changed line (a prompt's few
    rows go to what is being approved, not to the context above it)."""

    def __init__(self, diff: str = "", *, start_at_change: bool = False, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self.diff = diff
        self.start_at_change = start_at_change
        self._drawn: tuple[str, DiffPalette, DiffVisual] | None = None

    def show_diff(self, diff: str) -> None:
        self.diff = diff
        self.refresh(layout=True)

    def render(self) -> DiffVisual:
        # The palette is chosen when drawn: it follows the terminal's colour depth and the theme.
        palette = diff_palette(self.app)
        drawn = self._drawn
        if drawn is None or drawn[0] != self.diff or drawn[1] != palette:
            drawn = self._drawn = (self.diff, palette, DiffVisual(
                _diff_lines(self.diff, palette, MAX_LINES, start_at_change=self.start_at_change)))
        return drawn[2]
