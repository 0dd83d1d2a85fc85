"""Snapshot tests: the layouts people see, pinned as SVG (pytest-textual-snapshot).

Deterministic by construction: a fixed session id, the project under a fake
HOME (the header shows `~/project`), usage figures given by the script, the
cursor not blinking, and a manual clock that the test steps between stages,
so every elapsed time and timeline bar is the same on every run.
"""

from __future__ import annotations

import pytest

from agent_tui.tui.state import ToolStatus
from tests.loopback import gated, hang, reply, text, tool_use

from .helpers import make_app, screen_text, wait_armed, wait_until

USAGE = {"input_tokens": 12_400}


def usage_out(output_tokens: int) -> dict[str, int]:
    """USAGE with the output tokens given: a reply carrying tmp_path would otherwise be
    estimated from the path's length, and the gauge would depend on where the test runs."""
    return {**USAGE, "output_tokens": output_tokens}


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _app(api, project, **options):
    app, _ = make_app(api, project, **options)
    clock = ManualClock()
    # The screen's times and the engine's tool durations come from the one clock the test steps.
    app.clock = app.session.options.clock = clock
    return app, clock


async def _prepare(pilot) -> None:
    pilot.app.prompt_input.cursor_blink = False
    await pilot.pause()


async def _send(pilot, prompt: str) -> None:
    await pilot.press(*prompt, "enter")


async def _prompt_armed(pilot, app, clock, prompt: str) -> None:
    """`prompt` sent, its permission prompt up and armed (`a` too), the clock moved on."""
    await _prepare(pilot)
    await _send(pilot, prompt)
    await wait_until(pilot, lambda: app.permission.current is not None)
    await wait_armed(pilot, app, always=True)
    clock.now += 0.7
    await pilot.pause(0.2)


def _records(app, status: str, *ids: str):
    def check() -> bool:
        return all(app.conversation.tool_records.get(i) is not None and app.conversation.tool_records[i].status == status for i in ids)

    return check


def _stream_until_hang(*blocks, usage=USAGE):
    """A reply whose stream stops, still open, after its last content block."""
    whole = reply(*blocks, usage=usage)
    return hang(after=len(whole.events) - 1, of=whole)


def test_idle(snap_compare, api, project):
    app, _ = _app(api, project)
    assert snap_compare(app, terminal_size=(120, 32), run_before=_prepare)


def test_streaming_with_the_timeline_busy(snap_compare, api, project):
    # Each tool_use block is its own segment (delay_before), held until the test's clock has moved.
    stream = _stream_until_hang(
        text("I'll look around the project first: the source files, then a build.\n\n"),
        tool_use("Glob", {"pattern": "src/**/*.py"}, id="toolu_glob"),
        tool_use("Bash", {"command": "sleep 30; touch build.log"}, id="toolu_build", delay_before=0.01),
        tool_use("Read", {"file_path": str(project / "src" / "app.py")}, id="toolu_read", delay_before=0.01),
    )
    stream, bash_block = gated(stream, at=1)
    stream, read_block = gated(stream, at=2)
    api.push(stream)
    app, clock = _app(api, project, allow=["Bash"])

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "find the python files and build the project")
        await wait_until(pilot, _records(app, ToolStatus.DONE, "toolu_glob"))
        clock.now += 0.8
        bash_block.set()
        await wait_until(pilot, _records(app, ToolStatus.RUNNING, "toolu_build"))
        clock.now += 1.6
        read_block.set()
        await wait_until(pilot, lambda: "toolu_read" in app.conversation.tool_records)
        clock.now += 0.9
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)


def test_permission_prompt_with_a_diff(snap_compare, api, project):
    target = str(project / "src" / "app.py")
    edit = {
        "file_path": target,
        "old_string": '    return "Hello, " + name\n',
        "new_string": '    """Greet someone by name."""\n    return f"Hello, {name}!"\n',
    }
    api.push(
        reply(text("Let me read it first."), tool_use("Read", {"file_path": target}, id="toolu_read"),
              usage=usage_out(35)),
        reply(text("Now the change:"), tool_use("Edit", edit, id="toolu_edit"), usage=usage_out(57)),
    )
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "use an f-string in greet")
        await wait_until(pilot, lambda: app.permission.current is not None)
        await wait_armed(pilot, app, always=True)  # the armed prompt: its keys drawn in full colour
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(110, 36), run_before=run_before)


def test_gauge_near_the_auto_compact_threshold(snap_compare, api, project):
    api.push(reply(text("The context is filling up; it compacts automatically at the mark."), usage={"input_tokens": 150_000, "output_tokens": 2_400}))
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "how full is the context?")
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 24), run_before=run_before)


def test_light_theme(snap_compare, api, project):
    api.push(
        reply(text("Listing the sources."), tool_use("Glob", {"pattern": "src/*.py"}, id="toolu_glob"), usage=USAGE),
        reply(text("There are **two** modules:\n\n- `src/app.py`\n- `src/util.py`"), usage=USAGE),
    )
    app, clock = _app(api, project, theme="agent-light")

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "list the sources")
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_80_by_24(snap_compare, api, project):
    api.push(
        reply(tool_use("Bash", {"command": "ls src"}, id="toolu_ls"), usage=USAGE),
        reply(text("Two files: `app.py` and `util.py`."), usage=USAGE),
    )
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "what is in src?")
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# ---------------------------------------------------------------- the sizes people use

SIZES = [pytest.param((60, 20), id="60x20"), pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


@pytest.mark.parametrize("size", SIZES)
def test_streaming_turn_at_size(snap_compare, api, project, size):
    api.push(
        reply(tool_use("Glob", {"pattern": "src/*.py"}, id="toolu_glob"), usage=USAGE),
        _stream_until_hang(
            text(
                "Two modules live in `src/`:\n\n| file | defines | lines |\n|:-----|:------:|-----:|\n"
                "| app.py | greet | 2 |\n| util.py | add | 2 |\n\nNext I will read `app.py` and "
            )
        ),
    )
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "what is in src?")
        await wait_until(pilot, _records(app, ToolStatus.DONE, "toolu_glob"))
        clock.now += 0.4
        await wait_until(pilot, lambda: "Next I will read" in screen_text(app))
        clock.now += 1.1
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_permission_prompt_at_size(snap_compare, api, project, size):
    target = str(project / "src" / "app.py")
    edit = {
        "file_path": target,
        "old_string": '    return "Hello, " + name\n',
        "new_string": '    """Greet someone by name."""\n    return f"Hello, {name}!"\n',
    }
    api.push(
        reply(tool_use("Read", {"file_path": target}, id="toolu_read"), usage=usage_out(30)),
        reply(text("Now the change:"), tool_use("Edit", edit, id="toolu_edit"), usage=usage_out(57)),
    )
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prompt_armed(pilot, app, clock, "use an f-string in greet")

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_permission_prompt_with_hidden_characters_and_a_long_command(snap_compare, api, project):
    """At 80x24: the bidi and zero-width characters marked, no `a` (and why), and the command's
    tail below the fold announced by "+N more lines" above the answers."""
    command = "echo done \u202e# efas\u202c\u200b" + "\n" * 20 + "touch finished.txt"
    api.push(reply(text("Finishing up."), tool_use("Bash", {"command": command}, id="toolu_bash"),
                   usage=usage_out(40)))
    app, clock = _app(api, project)

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "finish up")
        await wait_until(pilot, lambda: app.permission.current is not None)
        await wait_armed(pilot, app, always=True)
        clock.now += 0.7
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_timeline_at_size(snap_compare, api, project, size):
    # Each later model turn is held until its request has arrived and the clock has
    # moved: every turn starts at a known time and ends at a known time, whatever the load.
    bash_turn, bash_gate = gated(reply(tool_use("Bash", {"command": "wc -l src/app.py"}, id="toolu_bash"), usage=USAGE))
    last_turn, last_gate = gated(reply(text("Both modules define one function each; app.py has 2 lines."), usage=USAGE))
    api.push(
        reply(
            tool_use("Glob", {"pattern": "src/**/*.py"}, id="toolu_glob"),
            tool_use("Grep", {"pattern": "def ", "path": "src"}, id="toolu_grep"),
            usage=USAGE,
        ),
        bash_turn,
        last_turn,
    )
    app, clock = _app(api, project, allow=["Bash"])

    async def step(pilot, turn: int, seconds: float, gate) -> None:
        # The screen has taken the turn's start from the clock before the clock moves.
        await wait_until(pilot, lambda: app.conversation._turn is not None and app.conversation._turn.number == turn)
        clock.now += seconds
        gate.set()

    async def run_before(pilot) -> None:
        await _prepare(pilot)
        await _send(pilot, "survey the code and count the lines")
        await step(pilot, 2, 0.5, bash_gate)
        await wait_until(pilot, _records(app, ToolStatus.DONE, "toolu_bash"))
        await step(pilot, 3, 1.2, last_gate)
        await wait_until(pilot, lambda: app.gauge.finished_at is not None)
        # Below 148 columns (a 48-column pane and 100 for the transcript) the timeline is the strip.
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
