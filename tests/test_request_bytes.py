"""Requests built incrementally (docs/architecture.md §9): each history message is serialised
once, the body is joined from the pieces, the bytes are what a plain `json.dumps` of the
body gives, and the prefix a request shares with the one before it is byte for byte the
same (what prompt caching reads); the work proportional to the history runs in worker
threads, never on the event loop's thread (in the TUI, the thread that draws).

Driven through the real transports against the loopback servers of both protocols."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agent_tui.engine.context.pipeline as pipeline
import agent_tui.engine.loop.query as query_module
import agent_tui.engine.models.body as body_module
from agent_tui.cli import choose_model
from agent_tui.config import load_settings
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.memo import HistoryMemo
from agent_tui.engine.messages import normalize_for_api, tool_result_block, user_message
from agent_tui.engine.models.openai import OpenAIChatModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from tests.engine_helpers import FAST_RETRY, make_session
from tests.loopback import reply, text, tool_use
from tests.openai_loopback import OpenAILoopback, call, chat

KEY_ENV = "LOOPBACK_OPENAI_KEY"
TURNS = 4


@pytest.fixture
def oai():
    with OpenAILoopback() as srv:
        yield srv


def files(cwd: Path) -> list[Path]:
    """The files the model reads, one per turn; the first is large enough that the body goes
    out in several chunks."""
    out = []
    for i in range(TURNS):
        path = cwd / f"part_{i}.txt"
        lines = 1000 if i == 0 else 20
        path.write_text("".join(f"part {i} line {n}: naïve café — {'x' * 40}\n" for n in range(lines)))
        out.append(path)
    return out


def messages_session(api, cwd: Path) -> Session:
    paths = files(cwd)
    api.push(*(reply(text(f"Reading {i}."), tool_use("Read", {"file_path": str(p)})) for i, p in enumerate(paths)))
    api.push(reply("Done."))
    return make_session(api.url, cwd, prompt_caching=True)


def openai_session(oai, cwd: Path, monkeypatch) -> Session:
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    paths = files(cwd)
    oai.push(*(chat(f"Reading {i}.", call("Read", {"file_path": str(p)})) for i, p in enumerate(paths)))
    oai.push(chat("Done."))
    (cwd / ".agent-tui").mkdir()
    (cwd / ".agent-tui" / "settings.json").write_text(json.dumps(
        {"provider": "openai", "baseUrl": oai.url + "/v1", "apiKeyEnv": KEY_ENV, "model": "gpt-4.1"}))
    model = choose_model(load_settings(cwd))
    assert isinstance(model, OpenAIChatModel)
    return Session(model=model, tools=default_tools(), cwd=cwd, policy=PermissionPolicy(mode="default"),
                   options=SessionOptions(retry=FAST_RETRY))


@pytest.fixture(params=["messages", "openai"])
def provider(request, api, oai, tmp_path, monkeypatch) -> tuple[Session, Any]:
    # Small chunks, so that a request of this size is sent in several.
    monkeypatch.setattr(body_module, "CHUNK_BYTES", 16 * 1024)
    if request.param == "messages":
        return messages_session(api, tmp_path), api
    return openai_session(oai, tmp_path, monkeypatch), oai


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def message_prefix(raw: bytes) -> bytes:
    """The request's bytes up to the end of its next-to-last message (the last one carries the
    moving cache breakpoint on the Messages API)."""
    messages = json.loads(raw)["messages"]
    head = raw[: raw.index(b'"messages":[') + len(b'"messages":[')]
    return head + b",".join(dumps(m) for m in messages[:-1])


async def test_each_request_is_plain_json_and_starts_with_the_previous_ones_message_prefix(provider):
    session, srv = provider

    terminal = await session.submit("read the parts")

    assert terminal.reason is TerminalReason.COMPLETED, terminal.error
    raws = [r.raw for r in srv.requests]
    assert len(raws) == TURNS + 1
    assert len(raws[1]) > 3 * body_module.CHUNK_BYTES, "the large read did not make a body of several chunks"
    for raw, received in zip(raws, srv.requests, strict=True):
        assert raw == dumps(received.body), "not what a plain json.dumps of the same body gives"
    for n, (before, after) in enumerate(zip(raws, raws[1:], strict=False)):
        prefix = message_prefix(before)
        assert after.startswith(prefix), f"request {n + 1} departs from request {n}'s messages"
        if n >= 2:  # the large result is in the shared prefix from the third request on
            assert len(prefix) > body_module.CHUNK_BYTES


async def test_a_chunk_of_the_shared_prefix_is_the_last_bodys_chunk_not_a_new_copy(provider, monkeypatch):
    session, srv = provider
    bodies: list[body_module.Body] = []
    join = body_module.join_body

    def recording(*args: Any, **kwargs: Any) -> body_module.Body:
        bodies.append(join(*args, **kwargs))
        return bodies[-1]

    monkeypatch.setattr(body_module, "join_body", recording)
    terminal = await session.submit("read the parts")

    assert terminal.reason is TerminalReason.COMPLETED, terminal.error
    assert len(bodies) == TURNS + 1
    for before, after in zip(bodies[2:], bodies[3:], strict=False):
        reused = 0
        shared = len(message_prefix(bytes(before)))
        end = 0
        for n, chunk in enumerate(after.chunks):
            end += len(chunk)
            if end <= shared:  # wholly inside what the two requests share
                assert chunk is before.chunks[n], f"chunk {n} of the shared prefix was copied again"
                reused += 1
        made = [c for n, c in enumerate(after.chunks) if n >= len(before.chunks) or c is not before.chunks[n]]
        assert made, "no chunk was made for the new messages"
        assert reused >= 2  # the large result's chunks, at least


async def test_the_history_is_prepared_and_serialised_off_the_event_loops_thread(provider, monkeypatch):
    session, srv = provider
    seen: dict[str, set[int]] = {}

    def on_thread(module: Any, name: str) -> None:
        original = getattr(module, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, set()).add(threading.get_ident())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, recorded)

    on_thread(pipeline, "apply_tool_result_budget")
    on_thread(query_module, "check_images")
    on_thread(query_module, "normalize_for_api")
    on_thread(body_module, "join_body")

    terminal = await session.submit("read the parts")

    assert terminal.reason is TerminalReason.COMPLETED, terminal.error
    assert set(seen) == {"apply_tool_result_budget", "check_images", "normalize_for_api", "join_body"}
    loop_thread = threading.get_ident()
    assert all(loop_thread not in threads for threads in seen.values()), seen


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [user_message("go")]
    for i in range(turns):
        out.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"file_path": f"f{i}"}}]})
        out.append(user_message([tool_result_block(f"toolu_{i}", f"result {i}")]))
    return out


def test_a_memo_gives_what_normalising_from_scratch_gives_as_the_history_changes():
    memo = HistoryMemo()
    base = history(6)
    steps = [
        base[:3],
        base[:5],
        base,
        # An older result replaced (as microcompact does): a new message in place of the old.
        [*base[:4], user_message([tool_result_block("toolu_1", "[cleared]")]), *base[5:]],
        # Consecutive user messages (a nudge after the results), then a prompt after them.
        [*base, user_message("nudge"), user_message("next prompt")],
        # A broken history: a tool_use with no result, repaired.
        [*base, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "Read",
                                                  "input": {}}]}, user_message("go on")],
        # A duplicate tool_use id in a new message, after a valid history.
        [*base, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "Read",
                                                  "input": {}}]},
         user_message([tool_result_block("toolu_2", "again")])],
        base[:3],
        base,
    ]
    for step in steps:
        assert normalize_for_api(step, memo) == normalize_for_api(step)


def test_a_memo_returns_the_same_objects_for_the_messages_two_requests_share():
    memo = HistoryMemo()
    shared = history(3)
    first = normalize_for_api(shared, memo)
    second = normalize_for_api([*shared, *history(4)[-2:]], memo)
    assert len(second) == len(first) + 2
    assert all(a is b for a, b in zip(first, second, strict=False))


def test_after_old_results_are_cleared_the_messages_left_as_they_were_keep_their_api_form():
    """Microcompact changes messages early in the history: the ones after them that it left as
    they were are not cleaned again (the same objects come back), and the result is what
    normalising from scratch gives."""
    memo = HistoryMemo()
    shared = history(6)
    first = normalize_for_api(shared, memo)
    cleared = list(shared)
    cleared[2] = user_message([tool_result_block("toolu_0", "[Old tool result content cleared]")])
    second = normalize_for_api(cleared, memo)

    assert second == normalize_for_api(cleared)
    assert second[2] is not first[2]
    assert all(second[n] is first[n] for n in range(len(first)) if n != 2)


async def test_a_history_prepared_ahead_is_not_serialised_again_by_the_next_prompt(api, tmp_path, monkeypatch):
    """A resumed session's history is prepared in a thread before its first prompt
    (`Session.prepare_history`): that prompt's body is joined from the pieces made then."""
    monkeypatch.setattr(body_module, "CHUNK_BYTES", 16 * 1024)
    first = messages_session(api, tmp_path)
    assert (await first.submit("read the parts")).reason is TerminalReason.COMPLETED
    await first.aclose()
    api.push(reply("Again."))
    session = make_session(api.url, tmp_path, prompt_caching=True)
    session.history = list(first.history)
    bodies: list[tuple[int, body_module.Body]] = []
    join = body_module.join_body

    def recording(*args: Any, **kwargs: Any) -> body_module.Body:
        bodies.append((threading.get_ident(), join(*args, **kwargs)))
        return bodies[-1][1]

    monkeypatch.setattr(body_module, "join_body", recording)
    warming = session.prepare_history()
    assert warming is not None
    await warming
    terminal = await session.submit("once more")

    assert terminal.reason is TerminalReason.COMPLETED, terminal.error
    (ahead_thread, ahead), (_, sent) = bodies
    assert ahead_thread != threading.get_ident()
    raw = api.requests[-1].raw
    assert raw == dumps(api.requests[-1].body) and raw.startswith(message_prefix(bytes(ahead)))
    shared = len(message_prefix(bytes(ahead)))
    end = 0
    for n, chunk in enumerate(sent.chunks):
        end += len(chunk)
        if end <= shared:
            assert chunk is ahead.chunks[n], f"chunk {n} of the history was made again by the prompt"
    assert end > 2 * body_module.CHUNK_BYTES
