"""Output that lands while the person reads further up: a "new output below" line at the
transcript's bottom edge until End gets there; a slash command's output comes into view."""

from __future__ import annotations

from tests.loopback import gated, reply, text

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_until

LONG_ANSWER = "\n\n".join(f"Paragraph {n}: " + "some words " * 10 for n in range(30))
MARKER = "↓ new output below · End"


def _marker_line(app) -> list[str]:
    return [line for line in screen_text(app).splitlines() if MARKER in line]


async def _scrolled_up(pilot, app) -> None:
    await pilot.press("pageup", "pageup")
    await pilot.pause(0.1)
    assert not app.transcript.following and app.transcript.scroll_y < app.transcript.max_scroll_y


async def test_output_landing_while_scrolled_up_shows_a_marker_and_end_goes_to_it(api, tmp_path):
    stream, rest = gated(reply(text(LONG_ANSWER), text("\n\nFINAL_MARK: the last words.", delay_before=0.01)), at=1)
    api.push(stream)
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, lambda: "Paragraph 29" in screen_text(app))
        await pilot.pause(0.1)
        assert not _marker_line(app)
        await _scrolled_up(pilot, app)
        assert not _marker_line(app)  # nothing new yet

        rest.set()
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await pilot.pause(0.1)
        shown = screen_text(app)
        assert "FINAL_MARK" not in shown
        assert len(_marker_line(app)) == 1
        # The marker sits on the transcript's last row, over the view and not in the text.
        transcript = app.transcript.region
        assert shown.splitlines()[transcript.bottom - 1].strip().startswith("↓ new output below")

        await pilot.press("end")
        await pilot.pause(0.1)
        assert "FINAL_MARK" in screen_text(app) and not _marker_line(app)


async def test_scrolling_back_down_by_hand_clears_the_marker(api, tmp_path):
    stream, rest = gated(reply(text(LONG_ANSWER), text("\n\nFINAL_MARK.", delay_before=0.01)), at=1)
    api.push(stream)
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, lambda: "Paragraph 29" in screen_text(app))
        await _scrolled_up(pilot, app)
        rest.set()
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await wait_until(pilot, lambda: _marker_line(app))
        for _ in range(6):
            await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert "FINAL_MARK" in screen_text(app) and not _marker_line(app)


async def test_a_slash_command_s_output_scrolls_into_view_when_the_transcript_is_scrolled_up(api, tmp_path):
    api.push(reply(text(LONG_ANSWER)))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await _scrolled_up(pilot, app)

        await type_prompt(pilot, "/context")
        await wait_until(pilot, lambda: "Context · " in screen_text(app))
        await pilot.pause(0.1)
        assert not _marker_line(app)

        # Taller than the view: it shows from its first line.
        await _scrolled_up(pilot, app)
        await type_prompt(pilot, "/help")
        await wait_until(pilot, lambda: "Keys" in screen_text(app) and app.transcript.entries[-1].source.startswith("**Keys**"))
        await pilot.pause(0.2)
        help_entry = app.transcript.entries[-1]
        assert help_entry.outer_size.height > app.transcript.scrollable_content_region.height
        assert help_entry.region.y <= app.transcript.region.y + 1
        assert "/exit" not in screen_text(app)  # its end is further down


async def test_page_up_with_nothing_above_keeps_the_transcript_following(api, tmp_path):
    api.push(reply(text(LONG_ANSWER + "\n\nFINAL_MARK.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        await pilot.press("pageup")  # the transcript is still short: there is nothing above
        await pilot.pause(0.05)
        assert app.transcript.following
        await type_prompt(pilot, "write a lot")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await pilot.pause(0.1)
        assert "FINAL_MARK" in screen_text(app) and not _marker_line(app)
