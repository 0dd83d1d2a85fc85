"""MCP prompts, resources, roots and elicitation against a real server (tests/mcp_kit.py), the
model on the loopback Messages server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.mcp_features import (
    ElicitationAnswer,
    ElicitationForm,
    McpPrompt,
    McpPromptArgument,
    McpPromptError,
)
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import Recorder, make_session, tool_results, uncached
from tests.loopback import reply, tool_use
from tests.mcp_kit import kit_server
from tests.test_print_mode import env_for, run

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=="


@pytest.fixture
def kit(tmp_path: Path) -> dict[str, Any]:
    return kit_server(tmp_path)


def user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


# ---------------------------------------------------------------- prompts


async def test_an_mcp_prompt_is_a_command_whose_expansion_is_the_user_message(api, tmp_path, kit):
    api.push(reply("Reviewed."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit})

    content = await session.expand_mcp_prompt('/mcp__kit__review "Python 3" "error handling"')
    await session.submit(content)
    commands = {p.command: p for p in session.mcp_prompts()}
    await session.aclose()

    assert set(commands) == {"mcp__kit__review", "mcp__kit__chart"}
    assert commands["mcp__kit__review"].argument_hint == "<language> [focus]"
    assert user_blocks(api.requests[0].body)[-1]["text"] == "Review the Python 3 code, focusing on error handling."


async def test_a_prompt_with_an_image_sends_it_as_an_image_block(api, tmp_path, kit):
    api.push(reply("A red square."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit})

    await session.submit(await session.expand_mcp_prompt("/mcp__kit__chart sales"))
    await session.aclose()

    blocks = uncached(user_blocks(api.requests[0].body))
    assert blocks[0] == {"type": "text", "text": "Discuss the chart sales.\nI see a red square."}
    assert blocks[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert check_history(session.history) == []


async def test_a_missing_argument_or_an_unknown_prompt_is_not_sent(tmp_path, kit):
    session = make_session("http://127.0.0.1:9", tmp_path, mcp_servers={"kit": kit})

    with pytest.raises(McpPromptError, match=r"/mcp__kit__review needs language \(usage: "
                                             r"/mcp__kit__review <language> \[focus\]\)"):
        await session.expand_mcp_prompt("/mcp__kit__review")
    assert await session.expand_mcp_prompt("/mcp__kit__nothing here") is None
    assert await session.expand_mcp_prompt("review this") is None
    await session.aclose()


def test_arguments_are_positional_quoted_words_whole_and_the_last_takes_the_rest():
    prompt = McpPrompt("s", "p", arguments=(McpPromptArgument("a", required=True), McpPromptArgument("b")))

    assert prompt.bind("one") == {"a": "one"}
    assert prompt.bind("'one two' three four") == {"a": "one two", "b": "three four"}
    assert prompt.bind('"unclosed quote') == {"a": '"unclosed', "b": "quote"}


def test_print_mode_expands_an_mcp_prompt_given_as_the_prompt(api, tmp_path, kit):
    api.push(reply("Reviewed."))
    config = json.dumps({"mcpServers": {"kit": kit}})

    out = run(["-p", "/mcp__kit__review Rust", "--mcp-config", config, "--output-format", "json"],
              tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "Reviewed."
    assert user_blocks(api.requests[0].body)[-1]["text"] == "Review the Rust code, focusing on style."


def test_print_mode_reports_a_prompt_it_cannot_expand_and_sends_nothing(api, tmp_path, kit):
    config = json.dumps({"mcpServers": {"kit": kit}})

    out = run(["-p", "/mcp__kit__review", "--mcp-config", config], tmp_path, env_for(api.url))

    assert out.returncode == 1
    assert "/mcp__kit__review needs language" in out.stderr
    assert api.requests == []


# ---------------------------------------------------------------- resources


async def test_the_resource_tools_list_and_read_a_servers_resources(api, tmp_path, kit):
    api.push(
        reply(tool_use("ListMcpResourcesTool", {}, id="t_list")),
        reply(tool_use("ReadMcpResourceTool", {"server": "kit", "uri": "kit://notes/today"}, id="t_read"),
              tool_use("ReadMcpResourceTool", {"server": "nope", "uri": "x://y"}, id="t_bad")),
        reply("Otter food."),
    )
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit})
    rec = Recorder(session)

    await session.submit("what are my notes?")
    await session.aclose()

    tools = {t["name"]: t for t in api.requests[0].body["tools"]}
    assert tools["ReadMcpResourceTool"]["input_schema"]["required"] == ["server", "uri"]
    assert set(tools["ListMcpResourcesTool"]["input_schema"]["properties"]) == {"server"}
    [listed] = tool_results(api.requests[1].body)
    assert json.loads(listed["content"]) == [
        {"uri": "kit://notes/today", "name": "today", "mimeType": "text/plain", "description": "Today's notes",
         "server": "kit"},
        {"uri": "kit://data/config.json", "name": "config", "mimeType": "application/json", "server": "kit"},
    ]
    read, bad = tool_results(api.requests[2].body)
    assert json.loads(read["content"]) == {
        "contents": [{"uri": "kit://notes/today", "mimeType": "text/plain", "text": "Buy otter food."}]}
    assert bad["is_error"] is True and bad["content"] == 'Server "nope" not found. Available servers: kit'
    assert rec.of(ev.PermissionRequested) == []  # reads: nobody is asked


async def test_an_at_mention_of_a_resource_attaches_its_contents(api, tmp_path, kit):
    api.push(reply("Dark."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit})
    rec = Recorder(session)

    await session.submit("which theme does @kit:kit://data/config.json set?")
    await session.aclose()

    call, result, typed = user_blocks(api.requests[0].body)
    assert call["text"] == ('Called the ReadMcpResourceTool tool with the following input: '
                            '{"server": "kit", "uri": "kit://data/config.json"}')
    assert json.loads(result["text"].removeprefix("Result of calling the ReadMcpResourceTool tool:\n")) == {
        "contents": [{"uri": "kit://data/config.json", "mimeType": "application/json", "text": '{"theme": "dark"}'}]}
    assert typed["text"] == "which theme does @kit:kit://data/config.json set?"
    assert [m.text for m in rec.of(ev.UserMessage)] == ["which theme does @kit:kit://data/config.json set?"]


async def test_a_servers_changed_resource_list_is_listed_again(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__pin", {"name": "idea", "text": "Otters hold hands."}, id="t_pin")),
             reply("Pinned."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]))

    await session.submit("pin an idea")
    deadline = time.monotonic() + 20
    while "kit://pins/idea" not in {r.uri for r in session.mcp_resources()} and time.monotonic() < deadline:
        await session_pause()
    uris = [r.uri for r in session.mcp_resources()]
    await session.aclose()

    assert uris == ["kit://notes/today", "kit://data/config.json", "kit://pins/idea"]


def test_print_mode_attaches_a_mentioned_resource(api, tmp_path, kit):
    api.push(reply("Otter food."))
    config = json.dumps({"mcpServers": {"kit": kit}})

    out = run(["-p", "read @kit:kit://notes/today", "--mcp-config", config], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert "Buy otter food." in user_blocks(api.requests[0].body)[1]["text"]


# ---------------------------------------------------------------- roots


async def test_the_server_lists_the_working_directories_as_roots_and_hears_when_they_change(api, tmp_path, kit):
    extra = tmp_path / "extra"
    extra.mkdir()
    api.push(reply(tool_use("mcp__kit__roots", {}, id="t_roots")), reply("Two roots."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]))
    await session.start_mcp()

    session.add_directory(extra)
    deadline = time.monotonic() + 20
    while not (tmp_path / "roots.log").exists() and time.monotonic() < deadline:
        await session_pause()
    await session.submit("which roots?")
    await session.aclose()

    expected = f"{tmp_path.resolve().as_uri()} {extra.resolve().as_uri()}"
    assert (tmp_path / "roots.log").read_text() == expected + "\n"
    [roots] = tool_results(api.requests[1].body)
    assert roots["content"] == expected.replace(" ", "\n")


async def test_the_client_declares_roots_and_elicitation(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__capabilities", {}, id="t_caps")), reply("ok"))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]))

    await session.submit("what did you declare?")
    await session.aclose()

    declared = json.loads(tool_results(api.requests[1].body)[0]["content"])
    assert declared["roots"] == {"list_changed": True} and "form" in declared["elicitation"]


async def session_pause() -> None:
    import asyncio

    await asyncio.sleep(0.05)


# ---------------------------------------------------------------- elicitation


async def test_a_front_end_that_shows_forms_answers_an_elicitation(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Booked."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]))
    session.accept_elicitation_forms()
    asked: list[ev.ElicitationRequested] = []

    def answer(event: ev.Event) -> None:
        if isinstance(event, ev.ElicitationRequested) and event.future is not None:
            asked.append(event)
            event.future.set_result(ElicitationAnswer("accept", {"name": "Ann", "guests": 3, "room": "hall"}))

    session.bus.add_listener(answer)
    rec = Recorder(session)
    await session.submit("book a table")
    await session.aclose()

    [request] = asked
    assert request.server == "kit" and request.message == "Booking details, please"
    assert request.schema["required"] == ["name", "guests"]
    assert [r.action for r in rec.of(ev.ElicitationResolved)] == ["accept"]
    [booked] = tool_results(api.requests[1].body)
    assert booked["content"] == "booked: Ann, 3 guests, vegan=False, room=hall"


async def test_without_a_form_an_elicitation_is_declined_with_a_notice(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Not booked."))
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]))
    rec = Recorder(session)

    await session.submit("book a table")
    await session.aclose()

    assert tool_results(api.requests[1].body)[0]["content"] == "booking decline"
    assert rec.of(ev.ElicitationRequested) == []
    assert any("MCP server kit asked for input (Booking details, please); declined" in n.message
               for n in rec.of(ev.Notice))


def test_print_mode_declines_an_elicitation(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Not booked."))
    config = json.dumps({"mcpServers": {"kit": kit}})

    out = run(["-p", "book a table", "--mcp-config", config, "--allowedTools", "mcp__kit"], tmp_path,
              env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert tool_results(api.requests[1].body)[0]["content"] == "booking decline"


def test_a_form_is_checked_against_its_schema():
    schema = {"type": "object", "required": ["name", "guests"], "properties": {
        "name": {"type": "string"}, "guests": {"type": "integer", "minimum": 1, "maximum": 12, "title": "Guests"},
        "vegan": {"type": "boolean"}, "room": {"type": "string", "enum": ["garden", "hall"]}}}
    check = ElicitationForm.from_schema(schema).check

    assert check({"name": "Ann", "guests": "3", "vegan": True, "room": "hall"}) == {
        "name": "Ann", "guests": 3, "vegan": True, "room": "hall"}
    assert check({"name": "Ann"}) == "Guests is required"
    assert check({"name": "Ann", "guests": "many"}) == "Guests must be a whole number"
    assert check({"name": "Ann", "guests": "40"}) == "Guests must be between 1 and 12"
    assert check({"name": "Ann", "guests": "2", "room": "roof"}) == "room must be one of garden, hall"


# ---------------------------------------------------------------- through the Agent SDK


async def test_the_agent_sdk_lists_the_prompts_as_commands_and_a_prompt_expands(api, tmp_path, kit):
    sdk = pytest.importorskip("claude_agent_sdk")
    from tests.test_print_mode import AGENT

    api.push(reply("Reviewed."), reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Not booked."))
    opts = sdk.ClaudeAgentOptions(cli_path=AGENT, cwd=str(tmp_path), env=env_for(api.url),
                                  mcp_servers={"kit": kit}, allowed_tools=["mcp__kit"])

    async with sdk.ClaudeSDKClient(opts) as client:
        info = await client.get_server_info()
        await client.query("/mcp__kit__review Go")
        first = [m async for m in client.receive_response()]
        await client.query("book a table")
        [m async for m in client.receive_response()]

    commands = {c["name"]: c for c in info["commands"]}
    assert commands["mcp__kit__review"] == {"name": "mcp__kit__review", "description": "Review code in a language.",
                                            "argumentHint": "<language> [focus]"}
    assert first[-1].result == "Reviewed."
    assert user_blocks(api.requests[0].body)[-1]["text"] == "Review the Go code, focusing on style."
    # Nobody in the program can fill a form: the server hears a decline.
    assert tool_results(api.requests[2].body)[0]["content"] == "booking decline"


# ---------------------------------------------------------------- the reference server


@pytest.fixture(scope="session")
def everything(pytestconfig) -> dict[str, Any]:
    """`@modelcontextprotocol/server-everything` from npm, installed once into pytest's cache."""
    import shutil
    import subprocess

    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for @modelcontextprotocol/server-everything")
    folder = pytestconfig.cache.mkdir("server-everything")
    binary = folder / "node_modules" / ".bin" / "mcp-server-everything"
    if not binary.exists():
        installed = subprocess.run(["npm", "install", "--prefix", str(folder), "@modelcontextprotocol/server-everything"],
                                   capture_output=True, text=True, timeout=300)
        if installed.returncode != 0 or not binary.exists():
            pytest.skip(f"npm could not install server-everything: {installed.stderr.strip()[-300:]}")
    return {"command": str(binary), "args": ["stdio"]}


def test_the_reference_server_shows_its_gated_tools_expands_a_prompt_lists_roots_and_hears_a_decline(
        api, tmp_path, everything):
    api.push(
        reply(tool_use("mcp__everything__get-roots-list", {}, id="t_roots"),
              tool_use("mcp__everything__trigger-elicitation-request", {}, id="t_elicit"),
              tool_use("ReadMcpResourceTool", {"server": "everything",
                                               "uri": "demo://resource/static/document/features.md"}, id="t_read")),
        reply("Done."),
    )
    config = json.dumps({"mcpServers": {"everything": everything}})

    out = run(["-p", "/mcp__everything__args-prompt Paris France", "--mcp-config", config, "--output-format", "json",
               "--allowedTools", "mcp__everything"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    offered = {t["name"] for t in api.requests[0].body["tools"]}
    # Tools it lists only to clients that declare roots and elicitation.
    assert {"mcp__everything__get-roots-list", "mcp__everything__trigger-elicitation-request"} <= offered
    assert user_blocks(api.requests[0].body)[-1]["text"] == "What's weather in Paris, France?"
    roots, elicit, read = tool_results(api.requests[1].body)
    assert f"URI: {tmp_path.resolve().as_uri()}\n" in roots["content"]
    assert elicit["content"].startswith("❌ User declined to provide the requested information.")
    assert json.loads(read["content"])["contents"][0]["text"].startswith("# Everything Server - Features")


async def test_a_programs_elicitation_hook_answers_for_the_person(api, tmp_path, kit):
    sdk = pytest.importorskip("claude_agent_sdk")
    from tests.test_print_mode import AGENT

    seen: list[dict[str, Any]] = []

    async def fill(input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(input)
        return {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                       "content": {"name": "Bo", "guests": 2, "vegan": True}}}

    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Booked."))
    opts = sdk.ClaudeAgentOptions(cli_path=AGENT, cwd=str(tmp_path), env=env_for(api.url), mcp_servers={"kit": kit},
                                  allowed_tools=["mcp__kit"], hooks={"Elicitation": [sdk.HookMatcher("kit", [fill])]})

    async with sdk.ClaudeSDKClient(opts) as client:
        await client.query("book a table")
        [m async for m in client.receive_response()]

    [asked] = seen
    assert asked["hook_event_name"] == "Elicitation" and asked["mcp_server_name"] == "kit"
    assert asked["message"] == "Booking details, please" and asked["mode"] == "form"
    assert asked["requested_schema"]["required"] == ["name", "guests"]
    assert tool_results(api.requests[1].body)[0]["content"] == "booked: Bo, 2 guests, vegan=True, room=garden"


def test_a_configured_elicitation_hook_answers_in_print_mode(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Booked."))
    answer = {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                     "content": {"name": "Cy", "guests": 4}}}
    settings = {"hooks": {"Elicitation": [{"matcher": "kit", "hooks": [
        {"type": "command", "command": f"cat >/dev/null; echo '{json.dumps(answer)}'"}]}]}}

    out = run(["-p", "book a table", "--mcp-config", json.dumps({"mcpServers": {"kit": kit}}),
               "--settings", json.dumps(settings), "--allowedTools", "mcp__kit"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert tool_results(api.requests[1].body)[0]["content"] == "booked: Cy, 4 guests, vegan=False, room=garden"


async def test_an_elicitation_hook_that_exits_2_declines_before_any_form(api, tmp_path, kit):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Not booked."))
    hooks = {"Elicitation": [{"matcher": "kit", "hooks": [{"type": "command", "command": "exit 2"}]}]}
    session = make_session(api.url, tmp_path, mcp_servers={"kit": kit}, policy=PermissionPolicy(allow=["mcp__kit"]),
                           hooks=hooks)
    session.accept_elicitation_forms()
    rec = Recorder(session)

    await session.submit("book a table")
    await session.aclose()

    assert rec.of(ev.ElicitationRequested) == []
    assert [r.action for r in rec.of(ev.ElicitationResolved)] == ["decline"]
    assert tool_results(api.requests[1].body)[0]["content"] == "booking decline"
