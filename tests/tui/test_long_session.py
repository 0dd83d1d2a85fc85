"""A long session costs what a short one does: the transcript and the timeline keep the whole
session as data and mount only what is near the view (docs/architecture.md §8)."""

from __future__ import annotations

import time

from textual import events

from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.widgets.transcript import Transcript
from tests.bench.sessions import first_prompt, write_session

from .helpers import screen_text, wait_until

SESSION = "33333333-0000-4000-8000-000000000003"
TURNS = 500
# Entries a 40-row view may keep mounted: the view and a margin of lines above and below it.
MOUNTED_BOUND = 60


def resumed_app(api, cwd) -> AgentApp:
    """`agent-tui -c` in `cwd`: the session is resumed before the app starts."""
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(),
        cwd=cwd,
        policy=PermissionPolicy(mode="default", cwd=cwd),
        options=SessionOptions(persist=True),
    )
    session.resume(None)
    return AgentApp(session)


def mounted(app) -> int:
    return len(app.transcript.entries)


async def test_a_resumed_500_turn_session_mounts_a_bounded_window_and_scrolls_back_to_its_first_prompt(api, tmp_path):
    write_session(tmp_path, SESSION, TURNS)
    app = resumed_app(api, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: f"LAST-PROMPT {TURNS - 1}" in screen_text(app)
                         and "Resumed session 33333333" in screen_text(app))
        transcript = app.transcript
        # Every entry is there as data (a prompt, two answers and a tool call per turn); few are mounted.
        assert transcript.entry_count >= 4 * TURNS
        assert mounted(app) <= MOUNTED_BOUND
        # The timeline has a line per turn and per tool, drawn by the line API: no widget per row.
        assert app.timeline.line_count >= 3 * TURNS and not app.timeline.children
        assert app.timeline.display and app.timeline.is_anchored and "model · turn" in screen_text(app)

        # Scrolling up brings earlier turns in as they come near, and lets later ones go.
        seen = set()
        for _ in range(40):
            await pilot.press("pageup")
            await pilot.pause()
            assert mounted(app) <= MOUNTED_BOUND
            seen |= {line for line in screen_text(app).splitlines() if "prompt 4" in line}
        assert any("prompt 48" in line for line in seen), seen
        assert not transcript.following

        # Home goes to the very first prompt, not to a note that earlier entries are hidden.
        await pilot.press("home")
        await wait_until(pilot, lambda: first_prompt(SESSION) in screen_text(app))
        assert transcript.window[0] == 0 and mounted(app) <= MOUNTED_BOUND
        assert "earlier entries" not in screen_text(app)

        # End comes back to the last screen, following again.
        await pilot.press("end")
        await wait_until(pilot, lambda: f"LAST-PROMPT {TURNS - 1}" in screen_text(app))
        assert transcript.following and mounted(app) <= MOUNTED_BOUND


async def test_keys_typed_while_a_resumed_session_loads_reach_the_input_at_once(api, tmp_path):
    write_session(tmp_path, SESSION, 2 * TURNS)
    app = resumed_app(api, tmp_path)
    # On a quiet machine the earlier history loads within a frame or two. Each of its batches is
    # made to cost a few milliseconds of blocking work, as a slow machine's would, so the load
    # lasts seconds and the key can only get in if the loader hands the loop back as it goes.
    replay = app._replay_in_slices

    async def slowed(events_, conversation=None):
        if conversation is not None:  # the earlier prompts, after the last screen
            handle = conversation.handle

            async def slow_handle(batch):
                time.sleep(0.004)
                await handle(batch)

            conversation.handle = slow_handle
        await replay(events_, conversation)

    app._replay_in_slices = slowed
    async with app.run_test(size=(120, 40)) as pilot:
        # The last screen is drawn first, while the rest of the history loads.
        await wait_until(pilot, lambda: app.history_loading and f"LAST-PROMPT {2 * TURNS - 1}" in screen_text(app))
        # As the terminal driver posts a key: the input has it while the history still loads.
        app.post_message(events.Key("h", "h"))
        started = time.perf_counter()
        await wait_until(pilot, lambda: app.prompt_input.text == "h")
        assert app.history_loading, "the key waited for the whole history"
        took = time.perf_counter() - started
        await wait_until(pilot, lambda: not app.history_loading)
        assert app.transcript.entry_count >= 8 * TURNS and app.prompt_input.text == "h"
        assert took < 1.0


async def test_a_resumed_session_draws_its_last_screen_before_loading_the_rest_and_echoes_keys_meanwhile(
        api, tmp_path, monkeypatch):
    write_session(tmp_path, SESSION, TURNS)
    app = resumed_app(api, tmp_path)
    replay = app._replay_in_slices
    # The work that can wait (the permission prompt's parts, the menu, the model's TLS set-up, the
    # warm-up thread) waits for the last screen: noted as the transcript waits for it to be drawn.
    waited: list[bool] = []
    tail_drawn = Transcript.tail_drawn

    async def noting(self):
        waited.append(not app._worked_ahead and app.permission._mounts is None and app.prompt_input._menu is None)
        await tail_drawn(self)

    monkeypatch.setattr(Transcript, "tail_drawn", noting)
    # What the screen showed when the earlier prompts began to load; and keys typed during that load.
    seen_at_older_load: list[str] = []

    async def watched(events_, conversation=None):
        if conversation is not None:  # the earlier prompts, once the last screen is mounted
            seen_at_older_load.append(screen_text(app))
            handle = conversation.handle

            async def slow_handle(batch):
                time.sleep(0.004)  # as a slow machine's batches would: the load lasts seconds
                await handle(batch)

            conversation.handle = slow_handle
        await replay(events_, conversation)

    app._replay_in_slices = watched
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: seen_at_older_load)
        # The last screen was on screen (laid out and drawn) before any earlier prompt was loaded.
        assert f"LAST-PROMPT {TURNS - 1}" in seen_at_older_load[0]
        assert "Then it waits for the next prompt." in seen_at_older_load[0]
        assert app.history_loading
        assert waited == [True] and app._worked_ahead and app.permission._mounts is not None
        # Keys typed now are drawn in the input while the rest still loads.
        for key in "жук":
            app.post_message(events.Key(key, key))
        await wait_until(pilot, lambda: "жук" in screen_text(app))
        assert app.history_loading, "the echo waited for the whole history"
        await wait_until(pilot, lambda: not app.history_loading)
        # Still the whole session: its first prompt is there to scroll back to.
        assert app.transcript.entry_count >= 4 * TURNS and app.prompt_input.text == "жук"
        app.transcript.scroll_home()  # (Home itself moves the cursor of the input, which has text)
        await wait_until(pilot, lambda: first_prompt(SESSION) in screen_text(app))


async def test_the_command_lines_resume_draws_the_last_screen_before_the_engine_loads_then_goes_on(api, tmp_path):
    """`agent-tui -c` reads the stored session before the app; the app draws its last screen from it,
    then loads the engine and makes the session, which goes on with the whole history."""
    from agent_tui.cli import _resumed_start, build_parser
    from agent_tui.config import Settings
    from tests.loopback import reply

    write_session(tmp_path, SESSION, TURNS)
    model = AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test")
    start = _resumed_start(build_parser().parse_args(["-c"]), tmp_path, Settings(), model)
    assert start.resumed is not None and start.session_id == SESSION
    app = AgentApp(start)
    # When the engine began to load (a thread) and when the session was made (on the loop).
    at_load: list[tuple[bool, int]] = []
    at_build: list[str] = []
    load, build = start.load, start.build

    def noting_load():
        at_load.append((app.session is None, app.transcript.entry_count))
        load()

    def noting_build():
        at_build.append(screen_text(app))
        return build()

    start.load, start.build = noting_load, noting_build
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: "Resumed session 33333333" in screen_text(app) and not app.history_loading,
                         timeout=30)
        # Only the last prompts had been replayed when the engine began to load, and they were on screen.
        assert at_load[0][0] and 0 < at_load[0][1] < 4 * TURNS
        assert f"LAST-PROMPT {TURNS - 1}" in at_build[0] and "Then it waits for the next prompt." in at_build[0]
        # The session goes on with the stored one: its id, the whole history, the whole transcript.
        assert app.session.session_id == SESSION and len(app.session.history) == 4 * TURNS
        assert app.transcript.entry_count >= 4 * TURNS
        app.transcript.scroll_home()
        await wait_until(pilot, lambda: first_prompt(SESSION) in screen_text(app))
        # The next prompt is sent with the history before it.
        api.push(reply("next answer"))
        for key in "go on":
            app.post_message(events.Key("space" if key == " " else key, key))
        await wait_until(pilot, lambda: app.prompt_input.text == "go on")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(api.requests) == 1, timeout=30)
        assert len(api.requests[0].body["messages"]) == 4 * TURNS + 1


async def test_the_command_lines_resume_draws_the_last_screen_as_its_first_frame(api, tmp_path):
    """No frame of an empty transcript comes first: the app's first drawn frame (after its mounting,
    whose frames Textual does not draw) already holds the last screen."""
    from agent_tui.cli import _resumed_start, build_parser
    from agent_tui.config import Settings

    write_session(tmp_path, SESSION, TURNS)
    model = AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test")
    app = AgentApp(_resumed_start(build_parser().parse_args(["-c"]), tmp_path, Settings(), model))
    frames: list[str] = []
    display = app._display

    def drawn(screen, renderable):
        if renderable is not None and not app._batch_count and not frames:
            frames.append(screen_text(app))
        return display(screen, renderable)

    app._display = drawn
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: frames and app.session is not None, timeout=30)
        assert f"LAST-PROMPT {TURNS - 1}" in frames[0] and "Then it waits for the next prompt." in frames[0]
