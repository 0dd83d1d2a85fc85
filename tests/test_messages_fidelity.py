"""Messages API fidelity: what the real API (or a proxy in front of it) sends and expects back,
each through the whole loop against the loopback Messages API server."""

from __future__ import annotations

import asyncio
import json

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import Recorder, make_session, uncached
from tests.loopback import Response, raw, reply, status

START = ('{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
         '"model":"claude-sonnet-4-6","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}')


def stop(reason: str) -> list[tuple[str, str]]:
    delta = {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}}
    return [("message_delta", json.dumps(delta)), ("message_stop", '{"type":"message_stop"}')]


def text_block(index: int, value: str, start: dict | None = None) -> list[tuple[str, str]]:
    block = start or {"type": "text", "text": ""}
    return [
        ("content_block_start", json.dumps({"type": "content_block_start", "index": index, "content_block": block})),
        ("content_block_delta", json.dumps({"type": "content_block_delta", "index": index,
                                            "delta": {"type": "text_delta", "text": value}})),
        ("content_block_stop", json.dumps({"type": "content_block_stop", "index": index})),
    ]


def assistant_blocks(body: dict) -> list[dict]:
    return [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"]]


# 1 ---------------------------------------------------------------------------------------


async def test_a_thinking_block_cut_before_its_signature_is_not_sent_back(api, tmp_path):
    cut = [("message_start", START),
           ("content_block_start", '{"type":"content_block_start","index":0,'
                                   '"content_block":{"type":"thinking","thinking":"","signature":""}}'),
           ("content_block_delta", '{"type":"content_block_delta","index":0,'
                                   '"delta":{"type":"thinking_delta","thinking":"Let me work out"}}'),
           ("content_block_stop", '{"type":"content_block_stop","index":0}'),
           *text_block(1, "The answer beg"), *stop("max_tokens")]
    api.push(raw(cut), reply("ins here."))
    session = make_session(api.url, tmp_path, max_tokens=2000)

    terminal = await session.submit("think")

    assert terminal.reason is TerminalReason.COMPLETED
    sent = assistant_blocks(api.requests[1].body)
    assert sent == [{"type": "text", "text": "The answer beg"}]


# 2 ---------------------------------------------------------------------------------------


async def test_message_stop_ends_the_response_when_the_server_keeps_the_stream_open(api, tmp_path):
    answer = reply("All done.")
    answer.end = "hang"
    api.push(answer)
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await asyncio.wait_for(session.submit("hi"), 15)

    assert terminal.result == "All done." and len(api.requests) == 1
    assert len(rec.of(ev.RequestStarted)) == 1


# 3 ---------------------------------------------------------------------------------------


async def test_a_refusal_after_some_text_is_an_error_result_the_history_notes(api, tmp_path):
    api.push(raw([("message_start", START), *text_block(0, "Sure, here is how to"), *stop("refusal")]),
             reply("hello again"))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("something refused")

    assert terminal.is_error and "declined" in terminal.error
    assert "Sure, here is how to" not in terminal.error
    assert check_history(session.history) == []
    assert any("refusal" in json.dumps(m) for m in session.history[1:])
    assert (await session.submit("hi")).result == "hello again"


# 4 ---------------------------------------------------------------------------------------


def html_502() -> Response:
    page = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>" \
           b"</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
    return Response(status=502, headers={"content-type": "text/html"}, body=page)


async def test_a_proxys_html_error_page_shows_as_its_status_and_a_one_line_reason(api, tmp_path):
    api.handler = lambda body, i: html_502()
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "<" not in terminal.error and "\n" not in terminal.error
    assert "502" in terminal.error and "Bad Gateway" in terminal.error
    assert all("<" not in n.message for n in rec.of(ev.Notice))


# 5 ---------------------------------------------------------------------------------------


async def test_a_200_with_a_json_error_body_is_classified_by_its_type(api, tmp_path):
    body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    api.push(*[Response(status=200, headers={"content-type": "application/json"}, body=body)] * 3)
    session = make_session(api.url, tmp_path, fallback_model="claude-haiku-4-5")
    api.push(reply("from the fallback"))
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.result == "from the fallback"
    assert api.requests[-1].body["model"] == "claude-haiku-4-5"
    assert all("Connection lost" not in n.message for n in rec.of(ev.Notice))


async def test_a_data_only_error_event_is_classified_by_its_type(api, tmp_path):
    error = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    api.push(*[raw([("message_start", START), (None, error)])] * 3, reply("from the fallback"))
    session = make_session(api.url, tmp_path, fallback_model="claude-haiku-4-5")
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.result == "from the fallback"
    retries = [n.message for n in rec.of(ev.Notice) if n.kind == "retry"]
    assert retries and all(m.startswith("API overloaded") for m in retries)


async def test_a_413_is_prompt_too_long_and_compacts(api, tmp_path):
    api.push(reply("first answer"),
             status(413, "request_too_large", "Request exceeds the maximum size"),
             reply("<summary>The person said hi.</summary>"), reply("after compacting"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    await session.submit("hi")

    terminal = await session.submit("and again")

    assert terminal.result == "after compacting", (terminal, [r.body["messages"][-1] for r in api.requests])
    assert [c.trigger for c in rec.of(ev.Compaction)] == ["reactive"]


async def test_a_mid_stream_invalid_request_error_says_what_it_is_not_api_error_200(api, tmp_path):
    error = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                   "message": "messages.1.content: unexpected block."}})
    api.push(raw([("message_start", START), ("error", error)]))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "(200)" not in terminal.error and "Invalid request" in terminal.error
    assert ".." not in terminal.error


async def test_an_auth_error_ending_in_a_full_stop_does_not_end_in_two(api, tmp_path):
    api.push(status(401, "authentication_error", "invalid x-api-key."))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert "invalid x-api-key. Check ANTHROPIC_API_KEY" in terminal.error and ".." not in terminal.error


# 7 ---------------------------------------------------------------------------------------


async def test_citations_in_text_blocks_are_kept_and_sent_back(api, tmp_path):
    citation = {"type": "char_location", "cited_text": "The sky is blue.", "document_index": 0,
                "document_title": "facts", "start_char_index": 0, "end_char_index": 16}
    events = [("message_start", START),
              ("content_block_start", '{"type":"content_block_start","index":0,'
                                      '"content_block":{"type":"text","text":"","citations":[]}}'),
              ("content_block_delta", json.dumps({"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "citations_delta", "citation": citation}})),
              ("content_block_delta", '{"type":"content_block_delta","index":0,'
                                      '"delta":{"type":"text_delta","text":"the sky is blue"}}'),
              ("content_block_stop", '{"type":"content_block_stop","index":0}'), *stop("end_turn")]
    api.push(raw(events), reply("ok"))
    session = make_session(api.url, tmp_path)
    await session.submit("what colour is the sky?")

    await session.submit("thanks")

    [sent] = assistant_blocks(api.requests[1].body)
    assert sent == {"type": "text", "text": "the sky is blue", "citations": [citation]}


# 8 ---------------------------------------------------------------------------------------


async def test_pause_turn_continues_the_turn(api, tmp_path):
    api.push(raw([("message_start", START), *text_block(0, "Searching the web"), *stop("pause_turn")]),
             reply("and here is what I found."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="default"))

    terminal = await session.submit("search")

    assert terminal.reason is TerminalReason.COMPLETED and len(api.requests) == 2
    continued = uncached(api.requests[1].body["messages"])
    assert continued[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Searching the web"}]}
    assert "here is what I found" in terminal.result
    assert check_history(session.history) == []



# 6 ---------------------------------------------------------------------------------------


async def test_a_token_count_far_above_the_estimate_is_trusted_and_compacted(api, tmp_path):
    api.push(reply("first answer"),
             status(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
             reply("<summary>The person said hi and asked again.</summary>"), reply("after compacting"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    await session.submit("hi")

    terminal = await session.submit("and again")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "after compacting"
    assert [c.trigger for c in rec.of(ev.Compaction)] == ["reactive"]
    summary_request = api.requests[2].body["messages"]
    assert "and again" in json.dumps(summary_request)
    assert check_history(session.history) == []
