"""The `agent-client-protocol` package's own client side drives the installed `agent-tui --acp` (an
ACP agent, docs/architecture.md §8) against the loopback Messages API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine.messages import check_history
from agent_tui.engine.store import find_session, load_transcript, project_dir
from tests.loopback import hang, reply, text, tool_use
from tests.test_print_mode import AGENT, env_for

acp = pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, schema, text_block  # noqa: E402
from acp.stdio import spawn_agent_process  # noqa: E402


class Editor:
    """An ACP client as an editor is one: it shows updates, answers permission requests with
    `answer`, and, given `buffers`, serves `fs/*` from them (its unsaved buffers)."""

    def __init__(self, answer: str = "allow_once", buffers: dict[str, str] | None = None) -> None:
        self.answer = answer
        self.buffers = buffers
        self.updates: list[Any] = []
        self.permissions: list[tuple[schema.ToolCallUpdate, list[schema.PermissionOption]]] = []
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []

    def capabilities(self) -> schema.ClientCapabilities:
        offered = self.buffers is not None
        return schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=offered, write_text_file=offered), terminal=False)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, options: list[schema.PermissionOption], session_id: str,
                                 tool_call: schema.ToolCallUpdate, **_: Any) -> schema.RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(option_id=self.answer, outcome="selected"))

    async def read_text_file(self, path: str, session_id: str, limit: int | None = None, line: int | None = None,
                             **_: Any) -> schema.ReadTextFileResponse:
        assert self.buffers is not None
        self.reads.append(path)
        return schema.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, content: str, path: str, session_id: str,
                              **_: Any) -> schema.WriteTextFileResponse:
        assert self.buffers is not None
        self.writes.append((path, content))
        self.buffers[path] = content
        return schema.WriteTextFileResponse()

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def said(self) -> str:
        return "".join(u.content.text for u in self.of(schema.AgentMessageChunk))


@contextlib.asynccontextmanager
async def agent(api: Any, cwd: Path, editor: Editor, log: Path) -> AsyncIterator[Any]:
    """`agent-tui --acp` in `cwd`, connected and initialized; its stderr goes to `log`."""
    with log.open("ab") as err:
        async with spawn_agent_process(editor, AGENT, "--acp", env=env_for(api.url), cwd=cwd,
                                       transport_kwargs={"stderr": err}, use_unstable_protocol=True) as (conn, proc):
            init = await asyncio.wait_for(
                conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=editor.capabilities()), 30)
            conn.init = init
            yield conn
        conn.returncode = await asyncio.wait_for(proc.wait(), 10)


async def new_session(conn: Any, cwd: Path) -> str:
    return (await asyncio.wait_for(conn.new_session(cwd=str(cwd), mcp_servers=[]), 30)).session_id


async def ask(conn: Any, session_id: str, prompt: str) -> schema.PromptResponse:
    return await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block(prompt)]), 60)


async def test_a_prompt_streams_text_and_a_write_asks_permission_and_ends_the_turn(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(reply(text("I'll write the notes now."), tool_use("Write", {"file_path": str(target),
                                                                         "content": "first line\n"}, id="w1")),
             reply("Done: the notes are written."))
    editor = Editor(answer="allow_once")

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        caps = conn.init.agent_capabilities
        assert conn.init.protocol_version == 1 and caps.load_session and conn.init.auth_methods == []
        assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
        assert caps.mcp_capabilities.http and caps.mcp_capabilities.sse
        session_id = await new_session(conn, tmp_path)
        response = await ask(conn, session_id, "write my notes")

    assert response.stop_reason == "end_turn"
    assert editor.said() == "I'll write the notes now.Done: the notes are written."
    assert len(editor.of(schema.AgentMessageChunk)) >= 2
    call = next(u for u in editor.of(schema.ToolCallStart) if u.tool_call_id == "w1")
    assert call.kind == "edit" and call.status == "pending"
    assert [(d.type, d.path, d.new_text) for d in call.content] == [("diff", str(target), "first line\n")]
    assert call.locations[0].path == str(target)
    statuses = [u.status for u in editor.of(schema.ToolCallProgress) if u.tool_call_id == "w1" and u.status]
    assert statuses == ["in_progress", "completed"]
    (asked, options), = editor.permissions
    assert asked.tool_call_id == "w1" and asked.content[0].type == "diff"
    assert {o.kind for o in options} >= {"allow_once", "reject_once"}
    assert target.read_text() == "first line\n"
    commands, = editor.of(schema.AvailableCommandsUpdate)
    assert "compact" in [c.name for c in commands.available_commands]
    usage = editor.of(schema.UsageUpdate)[-1]
    assert 0 < usage.used <= usage.size and response.usage.output_tokens > 0
    assert conn.returncode == 0


async def test_todo_write_is_the_plan_and_tool_calls_carry_their_kind(api, tmp_path):
    todos = [{"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
             {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}]
    api.push(reply(tool_use("TodoWrite", {"todos": todos}, id="t1"), tool_use("Grep", {"pattern": "bug"}, id="g1")),
             reply("Planned."))
    editor = Editor()

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        response = await ask(conn, await new_session(conn, tmp_path), "plan the fix")

    assert response.stop_reason == "end_turn"
    plan, = editor.of(schema.AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [("Read the code", "completed"),
                                                              ("Fix the bug", "in_progress")]
    kinds = {u.tool_call_id: u.kind for u in editor.of(schema.ToolCallStart)}
    assert kinds == {"t1": "think", "g1": "search"}
    assert not editor.permissions


async def test_cancel_mid_stream_answers_cancelled_and_the_next_prompt_has_a_valid_history(api, tmp_path):
    api.push(hang(after=5, of=reply(text("A long answer that never ends"))), reply("The next answer."))
    editor = Editor()

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        first = asyncio.ensure_future(ask(conn, session_id, "tell me a long story"))
        for _ in range(300):
            if editor.of(schema.AgentMessageChunk) or first.done():
                break
            await asyncio.sleep(0.05)
        assert not first.done() and editor.said().startswith("A long")
        await conn.cancel(session_id=session_id)
        cancelled = await first
        second = await ask(conn, session_id, "now something short")

    assert cancelled.stop_reason == "cancelled"
    assert second.stop_reason == "end_turn" and editor.said().endswith("The next answer.")
    history = api.requests[1].body["messages"]
    assert check_history(history) == []
    assert history[0]["content"][0]["text"] == "tell me a long story"
    assert history[-1]["content"][-1]["text"] == "now something short"


async def test_session_load_replays_the_stored_conversation(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(reply(text("Writing."), tool_use("Write", {"file_path": str(target), "content": "kept\n"}, id="w1")),
             reply("All written."))
    async with agent(api, tmp_path, Editor(), tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        await ask(conn, session_id, "write the notes")
        listed = await conn.list_sessions(cwd=str(tmp_path))
    assert [s.session_id for s in listed.sessions] == [session_id]

    editor = Editor()
    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        await asyncio.wait_for(conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[]), 30)
        replayed = list(editor.updates)
        api.push(reply("Still here."))
        again = await ask(conn, session_id, "are you there?")
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        for _ in range(100):
            if editor.of(schema.CurrentModeUpdate):
                break
            await asyncio.sleep(0.05)

    assert [u.content.text for u in replayed if isinstance(u, schema.UserMessageChunk)] == ["write the notes"]
    assert "".join(u.content.text for u in replayed if isinstance(u, schema.AgentMessageChunk)) == \
        "Writing.All written."
    call = next(u for u in replayed if isinstance(u, schema.ToolCallStart))
    assert call.tool_call_id == "w1" and call.kind == "edit"
    done = [u for u in replayed if isinstance(u, schema.ToolCallProgress) and u.status == "completed"]
    assert [u.tool_call_id for u in done] == ["w1"] and done[0].content[0].type == "diff"
    # The loaded session goes on with its history, and its mode follows the editor.
    assert again.stop_reason == "end_turn"
    assert [u.current_mode_id for u in editor.of(schema.CurrentModeUpdate)] == ["plan"]
    assert [m["role"] for m in api.requests[-1].body["messages"]] == ["user", "assistant", "user", "assistant", "user"]


async def test_a_client_offering_fs_gets_the_write_and_serves_reads_from_its_buffers(api, tmp_path):
    existing = tmp_path / "app.py"
    existing.write_text("print('saved on disk')\n")
    created = tmp_path / "new.txt"
    buffers = {str(existing): "print('unsaved in the editor')\n"}
    api.push(reply(tool_use("Read", {"file_path": str(existing)}, id="r1")),
             reply(tool_use("Edit", {"file_path": str(existing), "old_string": "unsaved in the editor",
                                     "new_string": "edited in the editor"}, id="e1"),
                   tool_use("Write", {"file_path": str(created), "content": "from the model\n"}, id="w1")),
             reply("Both changed."))
    editor = Editor(buffers=buffers)

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        response = await ask(conn, session_id, "change the files")

    assert response.stop_reason == "end_turn"
    assert str(existing) in editor.reads
    read_result = api.requests[1].body["messages"][-1]["content"][0]
    assert "unsaved in the editor" in json.dumps(read_result)
    assert editor.writes == [(str(existing), "print('edited in the editor')\n"), (str(created), "from the model\n")]
    # The editor writes its buffers; agent-tui did not touch the disk.
    assert existing.read_text() == "print('saved on disk')\n" and not created.exists()


async def test_stdin_closing_mid_prompt_ends_the_session_cleanly(api, tmp_path):
    api.push(hang(after=5, of=reply(text("An answer cut short by the editor quitting"))))
    editor = Editor()

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        running = asyncio.ensure_future(ask(conn, session_id, "start something long"))
        for _ in range(300):
            if editor.of(schema.AgentMessageChunk):
                break
            await asyncio.sleep(0.05)
    with contextlib.suppress(Exception):
        await running

    assert conn.returncode == 0
    transcript = load_transcript(find_session(project_dir(tmp_path), session_id))
    assert transcript.finished and check_history(transcript.messages) == []
    assert transcript.messages[0]["content"][0]["text"] == "start something long"


async def test_allow_always_writes_the_rule_a_writes_and_reject_always_stops_asking(api, tmp_path):
    notes = tmp_path / "notes.txt"
    api.push(reply(tool_use("Write", {"file_path": str(notes), "content": "one\n"}, id="w1")), reply("Written."),
             reply(tool_use("Write", {"file_path": str(notes), "content": "two\n"}, id="w2")), reply("Again."))
    editor = Editor(answer="allow_always")

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        await ask(conn, session_id, "write one")
        await ask(conn, session_id, "write two")
        (_, options), = editor.permissions
        always = next(o for o in options if o.kind == "allow_always")
        editor.answer = "reject_always"
        # A rejection ends the turn (the prompt is the person's again); the rule denies the next call unasked.
        api.push(reply(tool_use("Bash", {"command": "touch made-by-bash"}, id="b1")),
                 reply(tool_use("Bash", {"command": "touch made-by-bash"}, id="b2")), reply("Denied again."))
        rejected = await ask(conn, session_id, "touch it")
        await ask(conn, session_id, "touch it again")

    assert notes.read_text() == "two\n" and rejected.stop_reason == "end_turn"
    rules = json.loads((tmp_path / ".agent-tui" / "settings.local.json").read_text())["permissions"]["allow"]
    assert always.name == f"Always allow {rules[0]}"
    assert [call.tool_call_id for call, _ in editor.permissions] == ["w1", "b1"]
    assert not (tmp_path / "made-by-bash").exists()
    denied = api.requests[-1].body["messages"][-1]["content"][0]
    assert denied["tool_use_id"] == "b2" and denied["is_error"]


async def test_ask_user_question_is_answered_through_the_permission_options(api, tmp_path):
    question = {"question": "Which database?", "header": "Database", "multiSelect": False,
                "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres", "description": "a server"}]}
    api.push(reply(tool_use("AskUserQuestion", {"questions": [question]}, id="q1")), reply("Postgres it is."))
    editor = Editor(answer="1")

    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        response = await ask(conn, await new_session(conn, tmp_path), "set up storage")

    assert response.stop_reason == "end_turn"
    (call, options), = editor.permissions
    assert call.title == "Which database?" and [o.name for o in options] == ["SQLite", "Postgres", "Skip"]
    result = api.requests[1].body["messages"][-1]["content"][0]
    assert not result.get("is_error") and "Postgres" in json.dumps(result)


async def test_the_editors_mcp_servers_join_the_settings_and_prompts_carry_images_and_files(api, tmp_path):
    from tests.test_mcp import PROBE_SERVER

    script = tmp_path / "probe_server.py"
    script.write_text(PROBE_SERVER)
    (tmp_path / ".agent-tui").mkdir()
    (tmp_path / ".agent-tui" / "settings.json").write_text(json.dumps({"mcpServers": {"fromsettings": {
        "command": sys.executable, "args": [str(script)], "env": {"PROBE_DIR": str(tmp_path)}}}}))
    editor_server = schema.McpServerStdio(name="fromeditor", command=sys.executable, args=[str(script)],
                                          env=[schema.EnvVariable(name="PROBE_DIR", value=str(tmp_path))])
    api.push(reply("I see a red square and your notes."))
    png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=="
    prompt = [text_block("what is this?"), schema.ImageContentBlock(type="image", data=png, mime_type="image/png"),
              schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
                  uri=f"file://{tmp_path}/notes.md", text="remember the milk", mime_type="text/markdown"))]

    async with agent(api, tmp_path, Editor(), tmp_path / "agent.log") as conn:
        new = await asyncio.wait_for(conn.new_session(cwd=str(tmp_path), mcp_servers=[editor_server]), 30)
        response = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=prompt), 60)

    assert response.stop_reason == "end_turn"
    body = api.requests[0].body
    offered = {t["name"] for t in body["tools"]}
    assert {"mcp__fromsettings__lookup", "mcp__fromeditor__lookup"} <= offered
    sent = body["messages"][-1]["content"]
    assert [b["type"] for b in sent if b["type"] != "text"] == ["image"]
    assert any("remember the milk" in b.get("text", "") and "notes.md" in b.get("text", "") for b in sent)


async def test_session_resume_goes_on_without_replaying(api, tmp_path):
    api.push(reply("First answer."))
    async with agent(api, tmp_path, Editor(), tmp_path / "agent.log") as conn:
        session_id = await new_session(conn, tmp_path)
        await ask(conn, session_id, "first question")

    editor = Editor()
    api.push(reply("Second answer."))
    async with agent(api, tmp_path, editor, tmp_path / "agent.log") as conn:
        await asyncio.wait_for(conn.resume_session(cwd=str(tmp_path), session_id=session_id), 30)
        replayed = [u for u in editor.updates if not isinstance(u, schema.AvailableCommandsUpdate)]
        await ask(conn, session_id, "second question")

    assert replayed == [] and editor.said() == "Second answer."
    assert [m["role"] for m in api.requests[-1].body["messages"]] == ["user", "assistant", "user"]


def test_malformed_lines_get_json_rpc_errors_and_the_agent_goes_on(tmp_path):
    lines = [
        "not json at all",
        "[1, 2, 3]",
        json.dumps({"jsonrpc": "2.0", "id": [7], "method": "initialize"}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "no/such/method", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "relative"}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                    "params": {"sessionId": "unknown", "prompt": []}}),
    ]
    done = subprocess.run([AGENT, "--acp"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          cwd=tmp_path, env=env_for(None), timeout=60)

    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a["id"], a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700), (None, -32600), (None, -32600), (1, None), (2, -32601), (3, -32602), (4, -32002)]
    assert answers[3]["result"]["protocolVersion"] == 1
    assert done.returncode == 0 and "parse error" in done.stderr
