"""DemoModel: the offline scripted model, driven directly with ModelRequests."""

from __future__ import annotations

import asyncio
import json
import math
import os

import pytest

from agent_tui.engine.messages import check_history
from agent_tui.engine.models.demo.model import SPEED_ENV, DemoModel
from agent_tui.engine.models.demo.plan import working_directory
from agent_tui.engine.models.stream import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
)

SCHEMA = {"type": "object", "properties": {}}
ALL_TOOLS = [{"name": n, "input_schema": SCHEMA} for n in ("Read", "Glob", "Grep", "Bash", "Write")]
NO_WRITE = [t for t in ALL_TOOLS if t["name"] != "Write"]


def system_for(cwd: str) -> str:
    return f"You are agent-tui.\n\nWorking directory: {cwd}\nPlatform: linux\n"


def request(text_or_messages, *, cwd: str = "/home/user/proj", tools=None, max_tokens: int = 32000):
    messages = (
        [{"role": "user", "content": [{"type": "text", "text": text_or_messages}]}]
        if isinstance(text_or_messages, str)
        else text_or_messages
    )
    return ModelRequest(
        model="demo",
        messages=messages,
        system=system_for(cwd),
        tools=ALL_TOOLS if tools is None else tools,
        max_tokens=max_tokens,
    )


async def collect(req: ModelRequest, speed: float = 0):
    return [event async for event in DemoModel(speed=speed).stream(req)]


def check_well_formed(events) -> MessageStop:
    """MessageStart first, paired BlockStart/BlockStop, deltas inside their block,
    MessageDelta then MessageStop last, and the final message equals the stopped blocks."""
    assert isinstance(events[0], MessageStart)
    assert events[0].message_id.startswith("msg_demo_")
    assert isinstance(events[-1], MessageStop)
    assert isinstance(events[-2], MessageDelta)
    open_index = None
    stopped = []
    next_index = 0
    for event in events[1:-2]:
        if isinstance(event, BlockStart):
            assert open_index is None, "a block started before the previous one stopped"
            assert event.index == next_index
            open_index = event.index
        elif isinstance(event, BlockDelta):
            assert event.index == open_index
        elif isinstance(event, BlockStop):
            assert event.index == open_index
            stopped.append(event.block)
            open_index = None
            next_index += 1
        else:
            pytest.fail(f"unexpected event in the middle of the stream: {event!r}")
    assert open_index is None
    final = events[-1]
    assert final.message == {"role": "assistant", "content": stopped}
    assert final.stop_reason == events[-2].stop_reason
    assert final.usage["input_tokens"] == events[0].usage["input_tokens"]
    return final


def text_of(message) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def tool_uses(message):
    return [b for b in message["content"] if b["type"] == "tool_use"]


def test_protocol_attributes():
    model = DemoModel(speed=0)
    assert (model.name, model.label, model.offline) == ("demo", "demo (offline)", True)


async def test_list_files_emits_glob_tool_use():
    final = check_well_formed(await collect(request("List the files here")))
    assert final.stop_reason == "tool_use"
    content = final.message["content"]
    assert content[0]["type"] == "text"
    assert text_of(final.message).startswith("**Demo model (offline)**")
    assert "list the files" in text_of(final.message)
    (use,) = tool_uses(final.message)
    assert use["name"] == "Glob"
    assert use["input"] == {"pattern": "**/*"}
    assert use["id"] == "toolu_demo_1_1"
    assert "_parse_error" not in use


@pytest.mark.parametrize("phrase", ["what files are here?", "ls", "list files"])
async def test_list_phrasings(phrase):
    final = check_well_formed(await collect(request(phrase)))
    assert [u["name"] for u in tool_uses(final.message)] == ["Glob"]


async def test_read_resolves_against_working_directory_line(tmp_path):
    final = check_well_formed(await collect(request("read README.md", cwd=str(tmp_path))))
    assert final.stop_reason == "tool_use"
    (use,) = tool_uses(final.message)
    assert use["name"] == "Read"
    assert use["input"] == {"file_path": os.path.join(str(tmp_path), "README.md")}
    assert os.path.isabs(use["input"]["file_path"])


async def test_working_directory_falls_back_to_process_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert working_directory("no such line") == os.getcwd()
    assert working_directory([{"type": "text", "text": "Working directory: /srv/x"}]) == "/srv/x"
    req = ModelRequest(model="demo", messages=[{"role": "user", "content": "open src/app.py"}], tools=ALL_TOOLS)
    final = check_well_formed(await collect(req))
    (use,) = tool_uses(final.message)
    assert use["input"]["file_path"] == os.path.join(os.getcwd(), "src", "app.py")


async def test_search_and_read_give_two_tool_uses_in_one_message():
    final = check_well_formed(await collect(request("search for foo and read a.py")))
    assert final.stop_reason == "tool_use"
    uses = tool_uses(final.message)
    assert [u["name"] for u in uses] == ["Grep", "Read"]
    assert uses[0]["input"] == {"pattern": "foo", "output_mode": "content", "-n": True}
    assert uses[1]["input"] == {"file_path": "/home/user/proj/a.py"}
    assert [u["id"] for u in uses] == ["toolu_demo_1_1", "toolu_demo_1_2"]
    assert "in parallel" in text_of(final.message)


async def test_quoted_search_run_and_dollar_commands():
    final = check_well_formed(await collect(request('grep "x and y" in src, then run git status')))
    uses = tool_uses(final.message)
    assert [u["name"] for u in uses] == ["Grep", "Bash"]
    assert uses[0]["input"]["pattern"] == "x and y"
    assert uses[0]["input"]["path"] == "/home/user/proj/src"
    assert uses[1]["input"]["command"] == "git status"
    assert uses[1]["input"]["description"]

    final = check_well_formed(await collect(request("$ ls -la; echo done")))
    (use,) = tool_uses(final.message)
    assert use["input"]["command"] == "ls -la; echo done"


async def test_write_only_when_offered():
    with_write = check_well_formed(await collect(request("write notes.txt with hello")))
    (use,) = tool_uses(with_write.message)
    assert use["name"] == "Write"
    assert use["input"] == {"file_path": "/home/user/proj/notes.txt", "content": "hello\n"}

    without = check_well_formed(await collect(request("write notes.txt with hello", tools=NO_WRITE)))
    assert without.stop_reason == "end_turn"
    assert tool_uses(without.message) == []
    assert "`Write` tool isn't available" in text_of(without.message)


async def test_unavailable_tool_is_explained_and_available_ones_still_run():
    only_read = [{"name": "Read", "input_schema": SCHEMA}]
    final = check_well_formed(await collect(request("run git status", tools=only_read)))
    assert final.stop_reason == "end_turn"
    assert tool_uses(final.message) == []
    assert "`Bash` tool isn't available" in text_of(final.message)

    final = check_well_formed(await collect(request("read a.py and run make", tools=only_read)))
    assert final.stop_reason == "tool_use"
    assert [u["name"] for u in tool_uses(final.message)] == ["Read"]
    assert "`Bash` tool isn't available" in text_of(final.message)


async def test_hello_explains_demo_and_how_to_connect():
    final = check_well_formed(await collect(request("hello")))
    assert final.stop_reason == "end_turn"
    assert tool_uses(final.message) == []
    text = text_of(final.message)
    assert text.startswith("**Demo model (offline)**")
    assert "not Claude" in text
    for needle in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "--model", "Ollama",
                   "list files", "read README.md", "search for TODO", "run git status"):
        assert needle in text


async def test_tool_results_get_summarised_with_end_turn():
    first = check_well_formed(await collect(request("list files and read a.py and run make")))
    uses = tool_uses(first.message)
    results = [
        {"type": "tool_result", "tool_use_id": uses[0]["id"], "content": "a.py\nb.py\nREADME.md"},
        {
            "type": "tool_result",
            "tool_use_id": uses[1]["id"],
            "content": [{"type": "text", "text": "     1\timport os\n     2\tprint(os.name)"}],
        },
        {
            "type": "tool_result",
            "tool_use_id": uses[2]["id"],
            "content": "make: *** No targets specified.\nExit code 2",
            "is_error": True,
        },
    ]
    history = [
        {"role": "user", "content": [{"type": "text", "text": "list files and read a.py and run make"}]},
        first.message,
        {"role": "user", "content": results},
    ]
    assert check_history(history) == []
    final = check_well_formed(await collect(request(history)))
    assert final.stop_reason == "end_turn"
    assert tool_uses(final.message) == []
    text = text_of(final.message)
    assert "I found 3 files:" in text and "`README.md`" in text
    assert "Here are the first lines of `a.py`" in text and "print(os.name)" in text
    assert "     1\t" not in text
    assert "The command `make` exited with code 2" in text and "No targets specified" in text
    assert "1 tool of 3 reported an error" in text
    assert not text.startswith("**Demo model")


async def test_summaries_of_empty_results_and_errors():
    first = check_well_formed(await collect(request("search for zzz and read gone.txt")))
    grep, read = tool_uses(first.message)
    history = [
        {"role": "user", "content": "search for zzz and read gone.txt"},
        first.message,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": grep["id"], "content": "No matches found"},
                {"type": "tool_result", "tool_use_id": read["id"], "content": "File does not exist.",
                 "is_error": True},
            ],
        },
    ]
    text = text_of(check_well_formed(await collect(request(history))).message)
    assert "No matches for `zzz`." in text
    assert "`Read`" in text and "returned an error" in text and "File does not exist." in text


async def test_tool_use_ids_follow_the_turn():
    history = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": "list files"},
    ]
    final = check_well_formed(await collect(request(history)))
    assert [u["id"] for u in tool_uses(final.message)] == ["toolu_demo_2_1"]


async def test_same_request_gives_same_stream():
    req = request("search for foo and read a.py")
    assert await collect(req) == await collect(req)
    hello = request("hello")
    assert await collect(hello) == await collect(hello)


async def test_usage_estimates():
    req = request("hello")
    final = check_well_formed(await collect(req))
    prompt_chars = len(req.system) + len("hello") + len(json.dumps(req.tools))
    assert final.usage["input_tokens"] == math.ceil(prompt_chars / 4)
    assert final.usage["output_tokens"] == math.ceil(len(text_of(final.message)) / 4)


async def test_max_tokens_cuts_text():
    final = check_well_formed(await collect(request("hello", max_tokens=10)))
    assert final.stop_reason == "max_tokens"
    assert len(text_of(final.message)) == 40
    assert final.usage["output_tokens"] == 10
    full = check_well_formed(await collect(request("hello")))
    assert text_of(full.message).startswith(text_of(final.message))


async def test_max_tokens_inside_tool_input_leaves_unparseable_tool_use():
    full = check_well_formed(await collect(request("read README.md")))
    text_chars = len(text_of(full.message))
    final = check_well_formed(await collect(request("read README.md", max_tokens=text_chars // 4 + 3)))
    assert final.stop_reason == "max_tokens"
    (use,) = tool_uses(final.message)
    assert "_parse_error" in use


class VirtualTime:
    """The demo model's clock and wait: sleeping moves the clock, no wall time passes."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def paced(speed: float) -> tuple[DemoModel, VirtualTime]:
    model, time_ = DemoModel(speed=speed), VirtualTime()
    model.clock, model.sleep = time_.clock, time_.sleep
    return model, time_


async def test_pacing_about_80_tokens_per_second():
    req = request("hello", max_tokens=40)  # 40 tokens = 160 characters of text
    model, at_1 = paced(1)
    events = [e async for e in model.stream(req)]
    assert check_well_formed(events).stop_reason == "max_tokens"
    text_deltas = [e for e in events if isinstance(e, BlockDelta) and e.kind == "text"]
    assert len(text_deltas) > 10 and all(len(d.text) <= 12 for d in text_deltas)
    assert 0.4 < at_1.now < 0.7  # 160 characters at 80 tokens (320 characters) a second

    model, at_4 = paced(4)
    [e async for e in model.stream(req)]
    assert at_4.now == pytest.approx(at_1.now / 4)


@pytest.mark.parametrize("value", ["0", "inf"])
async def test_env_var_sets_default_speed(monkeypatch, value):
    monkeypatch.setenv(SPEED_ENV, value)
    model = DemoModel()
    waits = VirtualTime()
    model.clock, model.sleep = waits.clock, waits.sleep
    events = [e async for e in model.stream(request("hello"))]
    assert set(waits.waits) <= {0}  # ~1000 characters would wait ~3 s at speed 1
    check_well_formed(events)
    assert DemoModel(speed=2).speed == 2


async def test_closing_the_stream_stops_it():
    model, virtual = paced(1)
    stream = model.stream(request("hello"))
    seen = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, BlockDelta):
            break
    waited = virtual.now
    await stream.aclose()
    assert virtual.now == waited  # nothing more was paced out after the close
    assert not any(isinstance(e, MessageStop) for e in seen)
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


async def test_cancelling_the_consumer_stops_it_at_its_wait():
    seen = []
    waiting = asyncio.Event()
    model = DemoModel(speed=1)

    async def wait_forever(_seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()

    model.sleep = wait_forever

    async def consume():
        async for event in model.stream(request("hello")):
            seen.append(event)

    task = asyncio.create_task(consume())
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen and not any(isinstance(e, MessageStop) for e in seen)
