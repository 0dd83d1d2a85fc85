"""Tool rows: the keyboard walks to any earlier one (Ctrl+O, then ↑ / ↓) to open it; a Bash
row says how the command ended (its last line, or the line naming the failure); TodoWrite's
text for the model is never what is shown."""

from __future__ import annotations

from agent_tui.tui.widgets.tool_call import ToolCall, output_gist
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, wait_until

PYTEST_OUTPUT = (
    ".FFFF                                                                    [100%]\n"
    "=================================== FAILURES ===================================\n"
    "___________________________________ test_b ____________________________________\n"
    "E   assert 1 == 2\n"
    "=========================== short test summary info ============================\n"
    "FAILED test_x.py::test_b - assert 1 == 2\n"
    "========================= 4 failed, 1 passed in 0.03s ==========================\n"
)


def test_a_failing_test_run_is_summed_up_by_its_tally_not_its_first_line():
    assert output_gist(PYTEST_OUTPUT, failed=True) == "4 failed, 1 passed in 0.03s"
    assert output_gist("building\nwrote dist/app.whl\n\n", failed=False) == "wrote dist/app.whl"
    assert output_gist("ok\nbash: nosuch: command not found\n", failed=True) == "bash: nosuch: command not found"
    assert output_gist("", failed=True) == ""


def _bash(n: int, command: str) -> dict:
    return tool_use("Bash", {"command": command}, id=f"toolu_bash{n}")


async def test_ctrl_o_then_up_walks_to_an_earlier_tool_and_opens_it(api, tmp_path):
    (tmp_path / "report.txt").write_text(PYTEST_OUTPUT)
    api.push(
        reply(_bash(1, "echo first-output"), _bash(2, "cat report.txt; exit 1"), _bash(3, "echo third-output")),
        reply(tool_use("TodoWrite", {"todos": [{"content": "fix test_b", "status": "in_progress",
                                                "activeForm": "Fixing test_b"}]}, id="toolu_todo")),
        reply(text("Three commands ran.")),
    )
    app, recorded = make_app(api, tmp_path, allow=["Bash"])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(*"run them", "enter")
        await wait_until(pilot, finished(recorded))
        await pilot.pause(0.1)
        rows = {row.record.tool_use_id: row for row in app.query(ToolCall)}
        shown = screen_text(app)
        # The failing command's row says how it ended; TodoWrite's row offers no model-facing text.
        summary = next(line for line in shown.splitlines() if "cat report.txt" in line)
        assert "4 failed, 1 passed" in summary and ".FFFF" not in summary
        assert not rows["toolu_todo"].has_output
        assert "Todos have been modified" not in shown

        # Ctrl+O opens the newest output (the third command) and focuses its row.
        await pilot.press("ctrl+o")
        await pilot.pause(0.05)
        assert app.focused is rows["toolu_bash3"] and rows["toolu_bash3"].expanded
        # ↑ walks to the earlier rows; Enter (or Ctrl+O) opens the focused one.
        await pilot.press("up", "up")
        await pilot.pause(0.05)
        assert app.focused is rows["toolu_bash1"]
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert rows["toolu_bash1"].expanded and "first-output" in screen_text(app)
        await pilot.press("down", "ctrl+o")
        await pilot.pause(0.05)
        assert rows["toolu_bash2"].expanded and "FAILED test_x.py::test_b" in screen_text(app)
        # Typing goes back to the input, the letter kept.
        await pilot.press("o", "k")
        await pilot.pause(0.05)
        assert app.focused is app.prompt_input and app.prompt_input.text == "ok"


async def test_esc_at_a_permission_prompt_records_no_words_of_the_person(api, tmp_path):
    from agent_tui.engine import events as ev

    api.push(reply(_bash(1, "touch marker.txt")), reply(text("Stopped.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"make it", "enter")
        await wait_until(pilot, lambda: app.permission.current is not None)
        await pilot.press("escape")
        await wait_until(pilot, finished(recorded))
        await pilot.pause(0.1)
        assert "you said" not in screen_text(app)
    resolved = [e for e in recorded if isinstance(e, ev.PermissionResolved)]
    assert resolved and resolved[0].feedback is None


async def test_a_burst_of_tool_calls_shows_every_row_in_order_with_how_it_ended(api, tmp_path):
    """The rows of a burst are mounted together (one layout for several rows, `add_soon`), and
    a row mounted after its tool finished draws the record as it is then."""
    for n in range(12):
        (tmp_path / f"f{n:02d}.py").write_text("x = 1\n" * (n + 1))
    calls = [tool_use("Read", {"file_path": str(tmp_path / f"f{n:02d}.py")}, id=f"toolu_read{n:02d}") for n in range(12)]
    api.push(reply(*calls[:6]), reply(*calls[6:]), reply(text("Twelve files read.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.press(*"read them", "enter")
        await wait_until(pilot, finished(recorded))
        await wait_until(pilot, lambda: "Twelve files read." in screen_text(app))
        rows = [row for row in app.transcript.entries if isinstance(row, ToolCall)]
        assert [row.record.tool_use_id for row in rows] == [f"toolu_read{n:02d}" for n in range(12)]
        shown = screen_text(app)
        for n in range(12):
            line = next(line for line in shown.splitlines() if f"f{n:02d}.py" in line and "Read" in line)
            assert f"{n + 1} line" in line, line
        # The timeline took in every row too (its height follows on the 0.1 s grid of a burst's rows).
        assert all(app.timeline.row_text(f"toolu_read{n:02d}") for n in range(12))
        await wait_until(pilot, lambda: app.timeline.virtual_size.height == app.timeline.line_count, timeout=5)
