"""A permission prompt appearing never shows the transcript at an old position, even for one
frame: the transcript shrinks to make room, and a transcript following the newest output must
be drawn at its new end in the very frame the prompt first appears in
(`widgets/transcript.py`, docs/architecture.md §8).
"""

from __future__ import annotations

from textual.screen import Screen

from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, settle, type_prompt, wait_armed, wait_until


async def test_the_frame_a_prompt_appears_in_shows_the_transcripts_end(api, tmp_path, monkeypatch):
    story = "\n\n".join(f"Paragraph {n}: the model explains step {n} of the fix." for n in range(60))
    api.push(reply(text(story), tool_use("Bash", {"command": "touch made.txt"}, id="toolu_bash")),
             reply(text("Done.")))
    app, recorded = make_app(api, tmp_path)
    frames: list[tuple[bool, float, float]] = []

    original = Screen._refresh_layout

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        transcript = getattr(app, "transcript", None)
        permission = getattr(app, "permission", None)
        if transcript is None or permission is None or not transcript.following:
            return
        # After a layout pass the transcript's sizes are the ones this frame is drawn at, and
        # its scroll offset the one the frame shows.
        frames.append((bool(permission.display), transcript.scroll_y, transcript.max_scroll_y))

    monkeypatch.setattr(Screen, "_refresh_layout", recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "fix it")
        await wait_until(pilot, lambda: app.permission.current is not None)
        await wait_armed(pilot, app)
        assert any(shown for shown, _, _ in frames), "no frame was laid out with the prompt on screen"
        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        # The prompt going away gives its rows back: every frame, with the prompt and after it,
        # shows the end of the transcript.
        assert not any(shown for shown, _, _ in frames[-3:])
        stale = [(shown, y, bottom) for shown, y, bottom in frames if bottom > 0 and round(y) != round(bottom)]
        assert not stale, f"frames drawn away from the end while following: {stale}"
