"""A unified diff whose removed and added lines stand apart at every colour depth.

The theme's error / success tints serve a truecolor terminal.  Fewer colours
would turn them into look-alike greys (light on grey at 16 colours, olive and
grey at 256), so those depths get colours that are exact entries of their own
palettes: the 256-colour cube's, and at 16 colours (8 too) ANSI colours 1 and
2 as text colours.  With `NO_COLOR` (or no colour at all) lines carry no
colour.  The `+` / `-` of each line stays in a gutter of its own, repeated on
the rows a long line wraps to, so the diff reads without colour too.
"""

from __future__ import annotations

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


def _diff_lines(diff: str, palette: DiffPalette, max_lines: int) -> list[tuple[Content, int]]:
    """(line, gutter width) pairs: the gutter is the `+` / `-` / ` ` of a changed or context
    line; the file and hunk headers have none (they wrap from their first column)."""
    if not diff:
        return []
    lines = diff.rstrip("\n").split("\n")
    out: list[tuple[Content, int]] = []
    for line in lines[:max_lines]:
        if line.startswith(("+++", "---")):
            out.append((Content.styled(line, "$text-muted bold"), 0))
        elif line.startswith("@@"):
            out.append((Content.styled(line, "$text-accent"), 0))
        elif line.startswith("\\"):
            out.append((Content.styled(line, "$text-muted italic"), 0))
        elif line.startswith(("+", "-")):
            # Bidi and zero-width characters drawn as tokens: nothing reorders or hides the code.
            out.append((reveal_hidden(line, palette.added if line[0] == "+" else palette.removed), 1))
        else:
            out.append((reveal_hidden(line), 1 if line.startswith(" ") else 0))
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
                sign = line[:gutter]
                rows += [sign + part for part in line[gutter:].wrap(max(width - gutter, 1))]
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
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class DiffView(Static):
    def __init__(self, diff: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self.diff = diff
        self._drawn: tuple[str, DiffPalette, DiffVisual] | None = None

    def show_diff(self, diff: str) -> None:
        self.diff = diff
        self.refresh(layout=True)

    def render(self) -> DiffVisual:
        # The palette is chosen when drawn: it follows the terminal's colour depth and the theme.
        palette = diff_palette(self.app)
        drawn = self._drawn
        if drawn is None or drawn[0] != self.diff or drawn[1] != palette:
            drawn = self._drawn = (self.diff, palette, DiffVisual(_diff_lines(self.diff, palette, MAX_LINES)))
        return drawn[2]
