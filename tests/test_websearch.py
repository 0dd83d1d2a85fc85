"""WebSearch as the API's server tool: offered in the request's tools for the models that have
it and as the rules allow (domain rules as allowed/blocked domains); its `server_tool_use` and
`web_search_tool_result` blocks, and the citations of the text after them, go back as the API
sent them (a loopback round trip); the transcript's one line for each."""

from __future__ import annotations

import json

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.websearch import describe_server_block
from tests.engine_helpers import Recorder, make_session, uncached
from tests.loopback import raw, reply, tool_use

START = ('{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
         '"model":"claude-sonnet-4-6","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}')
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
          "input": {"query": "python 3.14 release date"}}
RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
    {"type": "web_search_result", "url": "https://www.python.org/downloads/release/python-3140/",
     "title": "Python 3.14.0", "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1", "page_age": "October 7, 2025"},
    {"type": "web_search_result", "url": "https://docs.python.org/3.14/whatsnew/3.14.html",
     "title": "What's new in Python 3.14", "encrypted_content": "Ep0FCioIARgBIiQ5", "page_age": None},
]}
CITATION = {"type": "web_search_result_location", "url": "https://www.python.org/downloads/release/python-3140/",
            "title": "Python 3.14.0", "encrypted_index": "EpMBCioIARgBIiQ0", "cited_text": "Python 3.14.0 is out."}


def event(name: str, data: dict) -> tuple[str, str]:
    return name, json.dumps({"type": name, **data})


def searched_answer() -> list[tuple[str, str]]:
    """A streamed answer that searched the web, as the API sends one."""
    start = {**SEARCH, "input": {}}
    return [
        ("message_start", START),
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Let me search."}}),
        event("content_block_stop", {"index": 0}),
        event("content_block_start", {"index": 1, "content_block": start}),
        event("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta",
                                                            "partial_json": json.dumps(SEARCH["input"])}}),
        event("content_block_stop", {"index": 1}),
        event("content_block_start", {"index": 2, "content_block": RESULT}),
        event("content_block_stop", {"index": 2}),
        event("content_block_start", {"index": 3, "content_block": {"type": "text", "text": "", "citations": []}}),
        event("content_block_delta", {"index": 3, "delta": {"type": "citations_delta", "citation": CITATION}}),
        event("content_block_delta", {"index": 3, "delta": {"type": "text_delta", "text": "It came out in October."}}),
        event("content_block_stop", {"index": 3}),
        event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30,
                                "server_tool_use": {"web_search_requests": 1}}}),
        ("message_stop", '{"type":"message_stop"}'),
    ]


def web_search_tool(body: dict) -> list[dict]:
    return [uncached(t) for t in body["tools"] if t.get("type") == "web_search_20250305"]


async def test_a_web_search_round_trip_keeps_its_blocks_and_citations(api, tmp_path):
    api.push(raw(searched_answer()), reply("You're welcome."))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)
    try:
        first = await session.submit("when did python 3.14 come out?")
        await session.submit("thanks")
    finally:
        await session.aclose()
    assert web_search_tool(api.requests[0].body) == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}]
    assert first.reason.value == "completed" and first.result == "Let me search.It came out in October."
    [assistant] = [m for m in uncached(api.requests[1].body["messages"]) if m["role"] == "assistant"]
    assert assistant["content"] == [
        {"type": "text", "text": "Let me search."},
        SEARCH,
        RESULT,
        {"type": "text", "text": "It came out in October.", "citations": [CITATION]},
    ]
    assert check_history(session.history) == []
    assert recorder.of(ev.ToolQueued) == []  # the API ran the search: nothing for the executor
    completed = [e.block["type"] for e in recorder.of(ev.BlockCompleted)]
    assert completed[:4] == ["text", "server_tool_use", "web_search_tool_result", "text"]


async def test_domain_rules_become_the_search_domains(api, tmp_path):
    api.push(reply("a"), reply("b"))
    allowed = make_session(api.url, tmp_path, policy=PermissionPolicy(allow=["WebSearch(domain:docs.python.org)"]))
    blocked = make_session(api.url, tmp_path, policy=PermissionPolicy(deny=["WebSearch(domain:pinterest.com)"]))
    for session in (allowed, blocked):
        try:
            await session.submit("search")
        finally:
            await session.aclose()
    assert web_search_tool(api.requests[0].body)[0]["allowed_domains"] == ["docs.python.org"]
    assert web_search_tool(api.requests[1].body)[0]["blocked_domains"] == ["pinterest.com"]


async def test_web_search_is_left_out_where_it_cannot_run(api, tmp_path):
    cases = [
        ("claude-sonnet-4-6", PermissionPolicy(deny=["WebSearch"])),  # denied
        ("claude-sonnet-4-6", PermissionPolicy(interactive=False)),  # print mode with no rule for it
        ("qwen3:8b", PermissionPolicy(mode="bypassPermissions")),  # a model without the server tool
    ]
    api.push(*[reply("ok") for _ in cases], reply("ok"))
    for model, policy in [*cases, ("claude-sonnet-4-6", PermissionPolicy(interactive=False, allow=["WebSearch"]))]:
        session = make_session(api.url, tmp_path, policy=policy, model=model)
        try:
            await session.submit("search")
        finally:
            await session.aclose()
    assert [len(web_search_tool(r.body)) for r in api.requests] == [0, 0, 0, 1]


def test_the_transcript_shows_each_server_block_as_one_line():
    assert describe_server_block(SEARCH) == "Web search: python 3.14 release date"
    assert describe_server_block(RESULT) == "Web search: 2 results · www.python.org, docs.python.org"
    failed = {"type": "web_search_tool_result", "tool_use_id": "s", "content": {
        "type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}
    assert describe_server_block(failed) == "Web search failed: max_uses_exceeded"
    assert describe_server_block({"type": "text", "text": "hi"}) is None


async def test_an_agent_definition_listing_the_web_tools_gets_them(api, tmp_path):
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "researcher.md").write_text(
        "---\nname: researcher\ndescription: Looks things up on the web\ntools: Read, WebFetch, WebSearch\n---\n"
        "You research.\n")
    api.push(reply(tool_use("Agent", {"description": "Research", "prompt": "find the release date",
                                      "subagent_type": "researcher"}, id="t_agent")),
             reply("October 2025."), reply("It was October 2025."))
    session = make_session(api.url, tmp_path)
    try:
        await session.submit("when did python 3.14 come out?")
    finally:
        await session.aclose()
    sub_request = api.requests[1].body
    assert [t["name"] for t in sub_request["tools"]] == ["Read", "WebFetch", "web_search"]
