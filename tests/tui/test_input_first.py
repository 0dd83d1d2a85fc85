"""The app's message queue takes input first: a key typed during a burst of engine batches is
handled before the batches queued ahead of it, and input keeps its own order."""

from __future__ import annotations

from textual import events
from textual.message import Message

from agent_tui.tui.app import InputFirstQueue

from .helpers import make_app, wait_until


class _Batch(Message):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n


def _key(character: str) -> events.Key:
    return events.Key(character, character)


async def test_input_goes_ahead_of_queued_messages_in_the_order_it_came():
    queue = InputFirstQueue()
    for item in (_Batch(1), _Batch(2), _key("a"), _Batch(3), _key("b"), events.Paste("c"), _Batch(4)):
        queue.put_nowait(item)
    taken = [queue.get_nowait() for _ in range(7)]
    shown = [getattr(m, "n", None) or getattr(m, "key", None) or m.text for m in taken]
    assert shown == ["a", "b", "c", 1, 2, 3, 4]
    # Taken from the front, the input no longer counts as ahead: later input queues after the rest.
    queue.put_nowait(_Batch(5))
    queue.put_nowait(_key("d"))
    queue.put_nowait(_Batch(6))
    assert [getattr(queue.get_nowait(), "key", None) for _ in range(3)] == ["d", None, None]
    assert queue.empty()


async def test_the_app_handles_a_key_before_batches_queued_ahead_of_it(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    handled: list[str] = []
    async with app.run_test(size=(80, 24), message_hook=lambda m: handled.append(
            f"batch {m.n}" if isinstance(m, _Batch) else f"key {m.key}" if isinstance(m, events.Key) else "")) as pilot:
        await wait_until(pilot, lambda: app.prompt_input.has_focus)
        handled.clear()
        for n in range(5):
            app.post_message(_Batch(n))
        app.post_message(_key("x"))
        await wait_until(pilot, lambda: "batch 4" in handled and app.prompt_input.text == "x")
        order = [h for h in handled if h.startswith(("batch", "key x"))]
        assert order[0] == "key x" and order[1:6] == [f"batch {n}" for n in range(5)]


async def test_a_frame_waits_while_input_is_pending_three_ticks_at_most(api, tmp_path, monkeypatch):
    from textual.screen import Screen

    from agent_tui.tui.app import FRAMES_INPUT_FIRST, InputFirstScreen

    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.prompt_input.has_focus)
        screen = app.screen
        assert isinstance(screen, InputFirstScreen)
        ticks: list[bool] = []  # each tick: whether it drew
        monkeypatch.setattr(Screen, "_on_timer_update", lambda self: ticks.__setitem__(-1, True))
        pending = True
        monkeypatch.setattr(app, "input_pending", lambda: pending)

        def tick() -> None:
            ticks.append(False)
            screen._on_timer_update()

        for _ in range(8):
            tick()
        # Steady typing never stops the screen: every fourth tick draws.
        assert FRAMES_INPUT_FIRST == 3 and ticks == [False, False, False, True] * 2
        pending, ticks[:] = False, []
        for _ in range(3):
            tick()
        assert ticks == [True, True, True]
