"""Snapshots of what has to fit: a summary whose 4-column table is wider than the
transcript (at 80x24 and 120x40), and a diff on a 16-colour terminal."""

from __future__ import annotations

import pytest

from tests.loopback import reply, text, tool_use

from .helpers import screen_text, wait_until
from .test_snapshots import USAGE, _app, _prepare, _prompt_armed, _send, usage_out

SUMMARY = (
    "Done. Here is what changed:\n\n"
    "| file | change | why | tests |\n"
    "|:-----|:-------|:----|------:|\n"
    "| src/app.py | greet() uses an f-string and gains a docstring | string concatenation"
    " was the last one left in the module | 3 |\n"
    "| src/util.py | add() checks that both arguments are numbers | a str slipped through"
    " and produced '12' instead of 3 | 5 |\n"
    "| README.md | a usage section with both functions | nobody knew util.py existed | 0 |\n\n"
    "All eight tests pass."
)


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")])
def test_a_summary_with_a_four_column_table_fits_at_size(snap_compare, api, project, size):
    api.push(
        reply(tool_use("Glob", {"pattern": "src/*.py"}, id="toolu_glob"), usage=USAGE),
        reply(text(SUMMARY), usage=USAGE),
    )
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "tidy up the code and tell me what you changed")
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        clock.now += 2.0
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_a_diff_on_a_16_colour_terminal(snap_compare, api, project, monkeypatch):
    monkeypatch.setenv("TERM", "xterm-16color")
    monkeypatch.delenv("COLORTERM", raising=False)
    target = str(project / "src" / "app.py")
    edit = {
        "file_path": target,
        "old_string": '    return "Hello, " + name\n',
        "new_string": '    """Greet someone by name."""\n    return f"Hello, {name}!"\n',
    }
    api.push(
        reply(tool_use("Read", {"file_path": target}, id="toolu_read"), usage=usage_out(30)),
        reply(tool_use("Edit", edit, id="toolu_edit"), usage=usage_out(57)),
        reply(text("greet() now uses an f-string."), usage=usage_out(12)),
    )
    # acceptEdits: the change is made and its diff stays open in the transcript.
    app, clock = _app(api, project, mode="acceptEdits")

    async def run_before(pilot) -> None:
        assert app.console.color_system == "standard"
        await _prepare(pilot)
        await _send(pilot, "use an f-string in greet")
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        # the answer and the diff drawn (a loaded machine draws them after the turn's end)
        await wait_until(pilot, lambda: "greet() now uses an f-string." in screen_text(app)
                         and "Greet someone by name." in screen_text(app))
        clock.now += 1.0
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def _edit_deep_in_a_file(api, project):
    """An Edit whose change starts at line 21 of a 40-line module (three context lines above it)."""
    target = project / "src" / "shapes.py"
    target.write_text("".join(f"WIDTH_{n} = {n}\n" for n in range(1, 41)))
    edit = {"file_path": str(target), "old_string": "WIDTH_21 = 21\nWIDTH_22 = 22\n",
            "new_string": "WIDTH_21 = 210  # doubled\nWIDTH_22 = 220\nWIDTH_22B = 225\n"}
    api.push(
        reply(tool_use("Read", {"file_path": str(target)}, id="toolu_read"), usage=usage_out(30)),
        reply(text("Widening the middle shapes:"), tool_use("Edit", edit, id="toolu_edit"), usage=usage_out(57)),
    )


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((40, 12), id="40x12")])
def test_an_edit_prompt_shows_its_changed_lines_and_its_answers_at_size(snap_compare, api, project, size):
    """From the first changed line (no file headers, no context above), numbered, with "N more
    lines (↓ scrolls)" and every answer (y / a / n / e) on screen, even at 40x12."""
    _edit_deep_in_a_file(api, project)
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prompt_armed(pilot, app, clock, "widen the middle shapes")

    assert snap_compare(app, terminal_size=size, run_before=run_before)
