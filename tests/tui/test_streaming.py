"""Streaming answers into the transcript: what a batch of text deltas leaves on screen.

The app's handlers get bus events in batches (`AgentApp.replay` hands them one
batch, exactly as the bridge does after a slow frame), so each test decides how
the answer is cut into batches.
"""

from __future__ import annotations

import gc

import pytest
from textual import events

from agent_tui.engine import events as ev
from agent_tui.tui.segments import SEGMENT_CHARS
from agent_tui.tui.streaming import FROZEN_CHARS, group_segments
from agent_tui.tui.widgets import answer as answer_module
from agent_tui.tui.widgets.answer import AssistantText
from agent_tui.tui.widgets.markdown_lite import FrozenMarkdown

from .helpers import make_app, screen_text, wait_until


def answer(sections: int) -> str:
    parts = []
    for n in range(sections):
        parts.append(f"## Section {n}\n\nParagraph {n} says something about the loop, the tools and the stream.\n\n")
        if n % 3 == 0:
            parts.append(f"```python\ndef step_{n}(x):\n    return x + {n}\n```\n\n")
    return "".join(parts) + "THE-LAST-LINE of the answer.\n"


def opening(prompt: str = "go") -> list[ev.Event]:
    return [ev.UserMessage(text=prompt), ev.RequestStarted(turn=1, model="m", max_tokens=100)]


def closing(text: str) -> list[ev.Event]:
    return [
        ev.BlockCompleted(index=0, block={"type": "text", "text": text}),
        ev.QueryFinished(terminal_reason="completed", turns=1, usage={}, result=text),
    ]


def shown_sources(app) -> str:
    """The answer's text the transcript mounts now."""
    return "".join(
        w.source for w in app.transcript.children if isinstance(w, FrozenMarkdown | AssistantText)
    )


def recorded_sources(app) -> str:
    """The answer's text in every entry of the transcript, mounted or kept as data."""
    transcript = app.transcript
    widgets = [transcript.entry_widget(n) for n in range(transcript.entry_count)]
    return "".join(w.source for w in widgets if isinstance(w, FrozenMarkdown | AssistantText))


@pytest.mark.parametrize("sizes", [[1, 7, 64], [500, 5000], [3001]])
async def test_an_answer_in_batches_of_any_size_is_shown_whole_and_once(api, tmp_path, sizes):
    text = answer(60)  # about 9 KB: several segments, all within the transcript's budget
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.replay(opening())
        i = n = 0
        while i < len(text):
            size = sizes[n % len(sizes)]
            await app.replay([ev.TextDelta(index=0, text=text[i : i + size])])
            i += size
            n += 1
        await app.replay(closing(text))
        await pilot.pause()
        assert recorded_sources(app) == text
        assert text.endswith(shown_sources(app))
        assert "THE-LAST-LINE" in screen_text(app)


async def test_text_streamed_at_a_model_s_pace_stays_in_the_widgets_that_showed_it(api, tmp_path):
    text = answer(60)
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.replay(opening())
        widgets: set[AssistantText] = set()
        for i in range(0, len(text), 7):
            await app.replay([ev.TextDelta(index=0, text=text[i : i + 7])])
            widgets |= set(app.transcript.query(AssistantText))
        await app.replay(closing(text))
        await pilot.pause()
        entries = [w for w in app.transcript.children if isinstance(w, FrozenMarkdown | AssistantText)]
        # No copy of text on screen is made: each segment still mounted stays in the widget that streamed it
        # (those far above the view are unmounted, kept as data).
        assert set(entries) <= widgets and len(entries) > 2
        assert not any(isinstance(w, FrozenMarkdown) for w in entries)
        assert all(len(w.source) < SEGMENT_CHARS + 200 for w in entries)
        assert text.endswith(shown_sources(app))
        assert recorded_sources(app) == text
        assert "THE-LAST-LINE" in screen_text(app)


async def test_live_text_asks_for_a_redraw_at_most_so_often_and_the_end_is_drawn_at_once(api, tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(answer_module, "monotonic", lambda: now[0])
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.replay([*opening(), ev.TextDelta(index=0, text="First")])
        live = app.transcript.query_one(AssistantText)
        redraws: list[str] = []
        refresh = live.refresh

        def counted(*args, **kwargs):
            redraws.append(live.source)
            return refresh(*args, **kwargs)

        live.refresh = counted  # type: ignore[method-assign]
        # Within one interval of the last redraw: the text is kept, one redraw is due.
        for word in (" second", " third", " fourth"):
            live.append(word)
        assert redraws == [] and live.source == "First second third fourth"
        # The run ends: what was waiting is drawn then, not an interval later.
        await app.replay(closing(live.source))
        assert redraws == ["First second third fourth"]
        # Once the interval has passed, the next text is drawn at once.
        now[0] += 1 / answer_module.REDRAWS_PER_SECOND
        live.append(" fifth")
        assert redraws[-1] == "First second third fourth fifth"
        await pilot.pause()
        assert "First second third fourth fifth" in screen_text(app)


async def test_a_huge_batch_mounts_only_what_the_transcript_keeps(api, tmp_path):
    text = answer(3000)  # about 400 KB: a hundred segments, far more than the transcript keeps
    app, _ = make_app(api, tmp_path)
    mounted: list[object] = []

    def record(message: object) -> None:
        if isinstance(message, events.Mount) and isinstance(message._sender, FrozenMarkdown):
            mounted.append(message._sender)

    async with app.run_test(size=(110, 30), message_hook=record) as pilot:
        await app.replay([*opening(), ev.TextDelta(index=0, text=text), *closing(text)])
        await wait_until(pilot, lambda: "THE-LAST-LINE" in screen_text(app))
        shown = shown_sources(app)
        # The newest part of the answer, up to its end, is drawn; the rest was never mounted, only recorded.
        assert text.endswith(shown)
        assert 0 < len(shown) < len(text) // 10
        assert len(mounted) < 20
        assert recorded_sources(app) == text


async def test_a_large_batch_is_drawn_in_bounded_pieces_one_per_frame(api, tmp_path):
    text = answer(120)  # about 17 KB in one batch
    app, _ = make_app(api, tmp_path)
    frames: list[set[FrozenMarkdown]] = []

    async with app.run_test(size=(110, 30)) as pilot:
        display = app._display

        def drawn(screen, update) -> None:
            frames.append({w for w in app.transcript.children if isinstance(w, FrozenMarkdown)})
            display(screen, update)

        app._display = drawn  # type: ignore[method-assign]
        await app.replay([*opening(), ev.TextDelta(index=0, text=text), *closing(text)])
        await wait_until(pilot, lambda: "THE-LAST-LINE" in screen_text(app))
        # Several pieces were drawn (the oldest part of the batch is recorded as data, past the budget).
        pieces = set().union(*frames)
        assert len(pieces) >= 3
        assert all(len(piece.source) <= FROZEN_CHARS for piece in pieces)
        # Each frame drew at most one piece more than the one before: the batch never went out in one go.
        assert all(len(after - before) <= 1 for before, after in zip(frames, frames[1:], strict=False))
        assert recorded_sources(app) == text


async def test_full_collections_wait_while_an_answer_streams(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    usual = gc.get_threshold()
    async with app.run_test(size=(110, 30)) as pilot:
        await app.replay([*opening(), ev.TextDelta(index=0, text="Some text")])
        assert gc.get_threshold()[:2] == usual[:2]
        assert gc.get_threshold()[2] > 1_000_000
        await app.replay(closing("Some text"))
        await wait_until(pilot, lambda: gc.get_threshold() == usual)


def test_segments_are_grouped_into_pieces_of_bounded_size_without_losing_text():
    segments = [f"Paragraph {n} " * 20 + "\n\n" for n in range(50)]
    pieces = group_segments(segments, limit=2000)
    assert "".join(pieces) == "".join(segments)
    assert all(len(p) <= 2000 for p in pieces)
    assert len(pieces) < len(segments)
