"""Markdown tables fit the width they are drawn at: columns shrink and cells wrap,
and when even that cannot fit, each row becomes a block of "header: value" lines."""

from __future__ import annotations

from agent_tui.tui.widgets.markdown_lite import render_markdown

SUMMARY = (
    "| file | change | why | tests |\n"
    "|:-----|:-------|:----|------:|\n"
    "| agent_tui/tui/widgets/markdown_lite.py | tables fit the width of the transcript |"
    " the renderer never looked at the width and wrapped rows into rubble | 12 |\n"
    "| agent_tui/tui/widgets/diff.py | red and green at every colour depth |"
    " removed and added lines looked the same at 16 colours | 4 |\n"
    "| app.tcss | a narrower timeline | it took 40% of the screen | 0 |\n"
)
CELLS = [
    ["file", "change", "why", "tests"],
    ["agent_tui/tui/widgets/markdown_lite.py", "tables fit the width of the transcript",
     "the renderer never looked at the width and wrapped rows into rubble", "12"],
    ["agent_tui/tui/widgets/diff.py", "red and green at every colour depth",
     "removed and added lines looked the same at 16 colours", "4"],
    ["app.tcss", "a narrower timeline", "it took 40% of the screen", "0"],
]


def _lines(width: int) -> list[str]:
    return render_markdown(SUMMARY).layout(width).plain.split("\n")


def test_a_table_that_fits_keeps_one_line_per_row():
    lines = _lines(200)
    assert len(lines) == 5
    assert [cell.strip() for cell in lines[2].split("│")] == CELLS[1]


def test_a_table_wider_than_the_pane_shrinks_its_columns_and_wraps_inside_its_cells():
    for width in (100, 78, 60):
        lines = _lines(width)
        assert all(len(line) <= width for line in lines), width
        rows = [line for line in lines if "─┼─" not in line]
        # Every line of the table keeps its column separators in the same places.
        bars = {tuple(i for i, ch in enumerate(line) if ch == "│") for line in rows}
        assert len(bars) == 1 and len(next(iter(bars))) == 3, (width, lines)
        # Read down each column, the cells' lines give back the cells' text; the header stays one line.
        assert [cell.strip() for cell in rows[0].split("│")] == CELLS[0]
        body = rows[1:]
        starts = [n for n, line in enumerate(body) if line.split("│")[3].strip()]  # "tests" has one line each
        assert len(starts) == 3
        for number, start in enumerate(starts):
            end = starts[number + 1] if number + 1 < len(starts) else len(body)
            for column in range(4):
                parts = [line.split("│")[column].strip() for line in body[start:end]]
                joined = " ".join(p for p in parts if p)
                expected = CELLS[number + 1][column]
                assert joined.replace(" ", "") == expected.replace(" ", ""), (width, column, parts)


def test_a_right_aligned_column_stays_right_aligned_when_others_shrink():
    lines = [line for line in _lines(60) if "│" in line]
    ends = {len(line.rstrip()) for line in lines if line.split("│")[3].strip()}
    assert len(ends) == 1


def test_when_squeezed_columns_still_cannot_fit_each_row_is_a_block_of_header_value_lines():
    for width in (40, 24):
        lines = _lines(width)
        assert all(len(line) <= width for line in lines), width
        assert not any("│" in line for line in lines)
        blocks = "\n".join(lines).split("\n\n")
        assert len(blocks) == 3
        for block, cells in zip(blocks, CELLS[1:], strict=True):
            assert block.startswith("file:")
            for header, value in zip(CELLS[0], cells, strict=True):
                assert f"\n{header}:" in "\n" + block
                assert value.replace(" ", "") in block.replace(" ", "").replace("\n", "")
    # Values line up after the longest header.
    first = _lines(40)[:4]
    assert first[0].startswith("file:   agent_tui") and first[2].startswith("change: tables")


async def test_a_slash_command_s_table_wraps_its_cells_instead_of_cutting_them(api, tmp_path):
    from .helpers import make_app, screen_text, type_prompt, wait_until

    rule = "Bash(npm run build:production-with-source-maps-and-the-long-name:*)"
    app, _ = make_app(api, tmp_path, allow=[rule, "Read(./docs/**)"])
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "/permissions")
        await wait_until(pilot, lambda: "Permission mode:" in screen_text(app))
        await pilot.pause(0.1)
        rows = [line for line in screen_text(app).splitlines() if line.count("│") == 3]
        assert rows and not any("…" in row for row in rows)
        # Read down the rule column, the rule comes back whole.
        column = "".join(row.split("│")[1].strip() for row in rows).replace(" ", "")
        assert rule.replace(" ", "") in column  # (wrapped at the space)
