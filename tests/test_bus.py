"""EventBus: per-subscriber queues, only deltas coalesced, everything JSON-safe."""

import asyncio
import json
import tracemalloc

from agent_tui.engine import events as ev
from agent_tui.engine.bus import EventBus


def sample_events():
    fut = asyncio.get_event_loop_policy().new_event_loop().create_future()
    return [
        ev.SessionStarted(session_id="s", model="m", cwd="/", permission_mode="default", tools=["Read"]),
        ev.UserMessage(text="hi"),
        ev.RequestStarted(turn=1, model="m", max_tokens=10),
        ev.AttemptDiscarded(turn=1, attempt=1, reason="retry"),
        ev.TextDelta(index=0, text="a"),
        ev.ThinkingDelta(index=0, text="b"),
        ev.BlockCompleted(index=0, block={"type": "text", "text": "a"}),
        ev.ToolQueued(tool_use_id="t", name="Read", input={}, summary="", concurrency_safe=True),
        ev.ToolStarted(tool_use_id="t", name="Read"),
        ev.ToolProgress(tool_use_id="t", text="x"),
        ev.ToolFinished(tool_use_id="t", name="Read", is_error=False, preview="", duration=0.1),
        ev.PermissionRequested(tool_use_id="t", tool_name="Bash", input={}, message="m", future=fut),
        ev.PermissionResolved(tool_use_id="t", tool_name="Bash", behavior="allow"),
        ev.Usage(input_tokens=1, output_tokens=1, cache_read_input_tokens=0, cache_creation_input_tokens=0,
                 context_tokens=2, context_window=10, auto_compact_threshold=8),
        ev.Notice(kind="retry", message="m"),
        ev.Compaction(tokens_before=10, tokens_after=5, trigger="auto"),
        ev.CompactionProgress(trigger="manual", output_tokens=194),
        ev.Interrupted(during="streaming"),
        ev.QueryFinished(terminal_reason="completed", turns=1, usage={}, result="a"),
        ev.TodoUpdated(todos=[{"content": "Run tests", "status": "pending", "activeForm": "Running tests"}]),
        ev.ModeChanged(mode="plan", previous="default"),
        ev.ModelChanged(model="claude-opus-4-6", previous="claude-sonnet-4-6"),
        ev.McpServersChanged(servers=["docs"]),
        ev.BackgroundTask(task_id="t", description="d", status="completed", output_path="/tmp/t.md", summary="s"),
        ev.ElicitationRequested(server="docs", message="Your name?", schema={"type": "object"}, future=fut),
        ev.ElicitationResolved(server="docs", action="decline"),
    ]


def test_every_event_is_json_serialisable_with_its_type():
    events = sample_events()
    assert {type(e) for e in events} == set(ev.ALL_EVENTS)
    for e in events:
        data = json.loads(json.dumps(e.to_dict()))
        assert data["type"] == e.type
    assert "future" not in ev.PermissionRequested(
        tool_use_id="t", tool_name="Bash", input={}, message="m").to_dict()


async def test_each_subscriber_gets_every_event_in_order():
    bus = EventBus()
    a, b = bus.subscribe("a"), bus.subscribe("b")
    events = [ev.Notice(kind="info", message=str(i)) for i in range(5)]
    for e in events:
        bus.publish(e)
    assert [await a.get() for _ in range(5)] == events
    assert [await b.get() for _ in range(5)] == events


async def test_slow_subscriber_gets_deltas_coalesced_and_nothing_else_dropped():
    bus = EventBus()
    slow = bus.subscribe("slow")
    bus.publish(ev.TextDelta(index=0, text="Hel"))
    bus.publish(ev.TextDelta(index=0, text="lo"))
    bus.publish(ev.ToolProgress(tool_use_id="t", text="p1"))
    bus.publish(ev.TextDelta(index=0, text=" wor"))
    bus.publish(ev.TextDelta(index=0, text="ld"))
    bus.publish(ev.TextDelta(index=1, text="!"))
    got = [slow.get_nowait() for _ in range(slow.pending())]
    assert got == [
        ev.TextDelta(index=0, text="Hello"),
        ev.ToolProgress(tool_use_id="t", text="p1"),
        ev.TextDelta(index=0, text=" world"),
        ev.TextDelta(index=1, text="!"),
    ]


async def test_non_coalescing_subscriber_gets_every_delta():
    bus = EventBus()
    sub = bus.subscribe("raw", coalesce=False)
    for t in "abc":
        bus.publish(ev.TextDelta(index=0, text=t))
    assert sub.pending() == 3


async def test_publish_never_blocks_and_waiting_subscriber_wakes():
    bus = EventBus()
    sub = bus.subscribe()
    task = asyncio.create_task(sub.get())
    await asyncio.sleep(0)
    bus.publish(ev.Notice(kind="info", message="x"))
    assert (await asyncio.wait_for(task, 1)).message == "x"


async def test_closed_subscription_ends_iteration_after_queued_events():
    bus = EventBus()
    sub = bus.subscribe()
    bus.publish(ev.Notice(kind="info", message="last"))
    sub.close()
    assert [e.message async for e in sub] == ["last"]


def test_a_slow_subscriber_holds_a_long_run_of_deltas_at_about_the_size_of_its_text():
    bus = EventBus()
    sub = bus.subscribe("slow")
    tracemalloc.start()
    for n in range(100_000):  # 800 KB in 8-character deltas, each a new string as the decoder makes them
        bus.publish(ev.TextDelta(index=0, text=f"{n:07d} "))
    held, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # A str per delta would hold about 7 MB until the subscriber reads them.
    assert held < 2 * 800_000
    merged = sub.get_nowait()
    assert merged == ev.TextDelta(index=0, text="".join(f"{n:07d} " for n in range(100_000)))
    assert sub.get_nowait() is None


def test_engine_does_not_import_textual():
    import subprocess
    import sys

    code = (
        "import sys, agent_tui.engine.session, agent_tui.engine.loop.query, agent_tui.engine.models.demo.model, "
        "agent_tui.printer, agent_tui.tools.registry; print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
