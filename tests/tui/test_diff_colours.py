"""Removed lines read red and added lines green at every colour depth, and the `+` / `-`
gutter reads without colour (NO_COLOR, or a wrapped line)."""

from __future__ import annotations

import pytest
from rich._palettes import EIGHT_BIT_PALETTE, STANDARD_PALETTE
from rich.color import Color, ColorSystem
from rich.style import Style
from textual.app import App, ComposeResult

from agent_tui.tui.themes import load_themes
from agent_tui.tui.widgets.diff import NO_COLOUR, DiffView, DiffVisual, _diff_lines, diff_palette

DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def greet(name):\n"
    '-    return "Hello, " + name\n+    return f"Hello, {name}!"\n'
)
# The file headers are not drawn: the context line, then the removed and the added one, numbered.
REMOVED_ROW, ADDED_ROW = 1, 2

# What each depth's terminal is told (TERM, COLORTERM), and how Rich then draws a colour.
DEPTHS = {
    "truecolor": ("xterm-256color", "truecolor", ColorSystem.TRUECOLOR),
    "256": ("xterm-256color", None, ColorSystem.EIGHT_BIT),
    "16": ("xterm-16color", None, ColorSystem.STANDARD),
    "8": ("xterm", None, ColorSystem.STANDARD),
}


class DiffApp(App[None]):
    def __init__(self, theme: str) -> None:
        super().__init__()
        for loaded in load_themes()[0]:
            self.register_theme(loaded)
        self.theme = theme

    def compose(self) -> ComposeResult:
        yield DiffView(DIFF)


def _terminal(monkeypatch: pytest.MonkeyPatch, depth: str) -> ColorSystem:
    term, colorterm, system = DEPTHS[depth]
    monkeypatch.setenv("TERM", term)
    if colorterm:
        monkeypatch.setenv("COLORTERM", colorterm)
    else:
        monkeypatch.delenv("COLORTERM", raising=False)
    return system


def _shown(color: Color, system: ColorSystem) -> tuple[int, int, int]:
    """The colour a terminal of `system` shows for `color`."""
    drawn = color.downgrade(system)
    if system is ColorSystem.STANDARD:
        return tuple(STANDARD_PALETTE[drawn.number])
    if system is ColorSystem.EIGHT_BIT:
        return tuple(EIGHT_BIT_PALETTE[drawn.number])
    return tuple(drawn.get_truecolor())


def _tint(style: Style, system: ColorSystem) -> tuple[int, int, int] | None:
    """The first of the background and text colours that is a colour at all (not a grey)."""
    for color in (style.bgcolor, style.color):
        if color is not None:
            rgb = _shown(color, system)
            if max(rgb) - min(rgb) > 12:
                return rgb
    return None


async def _row_styles(app: DiffApp, row: int) -> tuple[str, list[Style]]:
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        strip = app.query_one(DiffView).render_line(row)
        text = "".join(segment.text for segment in strip)
        # The line number is muted grey: the colours are the sign's and the text's.
        return text, [segment.style for segment in strip
                      if segment.text.strip() and not segment.text.strip().isdigit() and segment.style]


@pytest.mark.parametrize("theme", ["agent-dark", "agent-light"])
@pytest.mark.parametrize("depth", list(DEPTHS))
async def test_removed_lines_are_red_and_added_lines_green_at_every_depth(monkeypatch, depth, theme):
    system = _terminal(monkeypatch, depth)
    removed_text, removed = await _row_styles(DiffApp(theme), REMOVED_ROW)
    added_text, added = await _row_styles(DiffApp(theme), ADDED_ROW)
    assert removed_text.startswith('2 -    return "Hello, "') and added_text.startswith('2 +    return f"Hello')
    for style in removed:
        red, green, blue = _tint(style, system) or (0, 0, 0)
        assert red > green and red > blue, (depth, theme, style)
    for style in added:
        red, green, blue = _tint(style, system) or (0, 0, 0)
        assert green > red and green > blue, (depth, theme, style)
    if depth in ("16", "8"):
        # Plain red and green (1 and 2), which an 8-colour terminal has too.
        numbers = {style.color.downgrade(system).number for style in removed + added}
        assert numbers == {1, 2}


async def test_with_no_color_lines_carry_no_colour_and_the_gutter_tells_them_apart(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = DiffApp("agent-dark")
    assert diff_palette(app) is NO_COLOUR
    for row, sign in ((REMOVED_ROW, "-"), (ADDED_ROW, "+")):
        text, styles = await _row_styles(DiffApp("agent-dark"), row)
        assert text.startswith(f"2 {sign}    return")
        assert all(_tint(style, ColorSystem.TRUECOLOR) is None for style in styles)


def test_a_wrapped_line_keeps_its_sign_in_the_gutter():
    long_line = "+" + "value = compute(a, b) " * 4 + "\n-" + "old = 1 " * 8 + "\n context line\n"
    rows = DiffVisual(_diff_lines("@@ -1 +1 @@\n" + long_line, NO_COLOUR, 400))._rows(24)
    assert all(len(row) <= 24 for row in rows)
    added = [row for row in rows if "compute" in row.plain]
    removed = [row for row in rows if "old = 1" in row.plain]
    assert len(added) >= 3 and len(removed) >= 2
    # The number on a line's first row only, the sign on every row.
    assert [row.plain[:2] for row in added] == ["1 "] + ["  "] * (len(added) - 1)
    assert all(row.plain[2] == "+" for row in added) and all(row.plain[2] == "-" for row in removed)
    assert [row.plain for row in rows if "context" in row.plain] == ["2  context line"]


def test_the_lines_are_numbered_without_file_headers_and_a_prompt_starts_at_the_first_change():
    diff = ("--- a/m.py\n+++ b/m.py\n@@ -8,7 +8,8 @@\n a\n b\n c\n-d\n+D\n+E\n e\n f\n g\n"
            "@@ -40,3 +41,3 @@\n x\n--- y\n+++ y\n z\n")
    rows = [row.plain for row in DiffVisual(_diff_lines(diff, NO_COLOUR, 400))._rows(40)]
    assert rows[:5] == [" 8  a", " 9  b", "10  c", "11 -d", "11 +D"]
    # A removed line reading `-- y` is a change, not a header; hunks are parted by a row.
    assert rows[9:] == ["   ⋮", "41  x", "41 --- y", "42 +++ y", "43  z"]
    shown = [row.plain for row in DiffVisual(_diff_lines(diff, NO_COLOUR, 400, start_at_change=True))._rows(40)]
    assert shown[:3] == ["11 -d", "11 +D", "12 +E"]
