"""Slash commands backed by the later engine features: /permissions, /context, /compact,
/config, /memory, /mcp, /todos and /resume (with the transcript replayed)."""

from __future__ import annotations

from pathlib import Path

from agent_tui.config import Settings
from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.widgets.permission import PermissionPrompt
from tests.engine_helpers import uncached
from tests.loopback import hang, reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until


def persistent_app(api, cwd: Path, session_id: str, **options) -> tuple[AgentApp, list[ev.Event]]:
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(),
        cwd=cwd,
        policy=PermissionPolicy(mode="default", cwd=cwd),
        session_id=session_id,
        options=SessionOptions(persist=True, **options),
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    return AgentApp(session), recorded


async def command(pilot, text_: str) -> None:
    await type_prompt(pilot, text_)
    await pilot.pause(0.1)


async def test_permissions_lists_rules_by_source_and_removes_one(api, tmp_path):
    app, _ = make_app(api, tmp_path, allow=["Bash(npm test:*)", "Read"])
    async with app.run_test(size=(110, 30)) as pilot:
        await command(pilot, "/permissions")
        await wait_until(pilot, lambda: "Bash(npm test:*)" in screen_text(app))
        shown = screen_text(app)
        assert "allow" in shown and "cli" in shown
        await command(pilot, "/permissions remove 1")
        await wait_until(pilot, lambda: "Removed allow rule Bash(npm test:*)" in screen_text(app))
        assert app.session.policy.allow == ["Read"]


async def test_context_shows_what_fills_the_window(api, tmp_path):
    api.push(reply("hello"))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 34)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await command(pilot, "/context")
        await wait_until(pilot, lambda: "Auto-compact" in screen_text(app))
        shown = screen_text(app)
        breakdown = await app.session.context_breakdown()
        assert "Context" in shown and "claude-sonnet-4-6" in shown
        for label, tokens in breakdown.rows():
            assert label in shown and f"{tokens:,}" in shown, (label, tokens)


async def test_compact_summarises_the_conversation(api, tmp_path):
    api.push(reply("first answer"), reply("<summary>We greeted each other.</summary>"))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "hello there")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await command(pilot, "/compact keep it short")
        await wait_until(pilot, lambda: any(isinstance(e, ev.Compaction) for e in recorded))
    summary_request = api.requests[1].body
    assert "keep it short" in summary_request["messages"][-1]["content"][-1]["text"]
    assert check_history(app.session.history) == []


async def test_config_memory_mcp_and_todos_answer(api, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Always use tabs.\n")
    app, _ = make_app(api, tmp_path)
    app.settings = Settings(model="claude-sonnet-4-6", sources={"model": "project"})
    # Tall enough for every /config row, the model's source among them.
    async with app.run_test(size=(120, 56)) as pilot:
        await command(pilot, "/memory")
        await wait_until(pilot, lambda: "17 chars" in screen_text(app))
        assert "AGENTS.md" in screen_text(app)
        await command(pilot, "/mcp")
        await wait_until(pilot, lambda: "No MCP servers configured" in screen_text(app))
        await command(pilot, "/todos")
        await wait_until(pilot, lambda: "No plan yet" in screen_text(app))
        await command(pilot, "/config")
        def model_row() -> str:
            return next((line for line in screen_text(app).splitlines()
                         if "claude-sonnet-4-6" in line and " model " in line), "")

        await wait_until(pilot, lambda: "project" in model_row())


async def test_resume_replays_a_stored_session_and_continues_it(api, tmp_path):
    """Text, parallel tools, a denial (n) and an interrupt (Esc); then /resume in a new app:
    the next request carries exactly the history the original session would have sent."""
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    api.push(
        reply(text("Reading both notes."),
              tool_use("Read", {"file_path": str(tmp_path / "a.txt")}),
              tool_use("Read", {"file_path": str(tmp_path / "b.txt")})),
        reply(tool_use("Bash", {"command": "touch made.txt"})),
        hang(after=8, of=reply(text("A long answer that the user interrupts before it ends"), chunk=6)),
    )
    first, recorded = persistent_app(api, tmp_path, "11111111-0000-4000-8000-000000000001")
    async with first.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "what do the notes say")
        prompt = first.query_one(PermissionPrompt)
        await wait_until(pilot, lambda: prompt.display and prompt.current is not None)
        await wait_armed(pilot, first)
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, first)
        await type_prompt(pilot, "tell me more")
        await wait_until(pilot, lambda: "A long answer" in screen_text(first))
        await pilot.press("escape")
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, first)
    original_history = first.session.history
    assert not (tmp_path / "made.txt").exists()

    api.push(reply("Still alpha and beta."))
    second, recorded = persistent_app(api, tmp_path, "22222222-0000-4000-8000-000000000002")
    async with second.run_test(size=(110, 30)) as pilot:
        await command(pilot, "/resume")
        await wait_until(pilot, lambda: "11111111" in screen_text(second))
        await command(pilot, "/resume 1")
        await wait_until(pilot, lambda: "Resumed session 11111111" in screen_text(second))
        shown = screen_text(second)
        assert "Interrupted" in shown or "interrupted" in shown
        await type_prompt(pilot, "and now?")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, second)
    body = api.requests[-1].body
    assert check_history(body["messages"]) == []
    expected = [*original_history, {"role": "user", "content": [{"type": "text", "text": "and now?"}]}]
    from agent_tui.engine.messages import normalize_for_api

    assert uncached(body["messages"]) == normalize_for_api(expected)


async def test_resume_without_an_id_opens_on_the_session_list(api, tmp_path):
    api.push(reply("stored answer"))
    first, recorded = persistent_app(api, tmp_path, "33333333-0000-4000-8000-000000000003")
    async with first.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "remember this")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, first)

    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(), cwd=tmp_path, options=SessionOptions(persist=True),
    )
    picker = AgentApp(session, pick_session=True)
    async with picker.run_test(size=(110, 30)) as pilot:
        await wait_until(pilot, lambda: "/resume N" in screen_text(picker))
        listed = next(line for line in screen_text(picker).splitlines() if "33333333" in line)
        assert "remember this" in listed, listed
        assert picker.session.history == [], "the picker resumes nothing until one is chosen"


async def test_cost_shows_dollars_and_the_cache_tokens(api, tmp_path):
    api.push(reply("hello", usage={"input_tokens": 1_000, "output_tokens": 2_000, "cache_read_input_tokens": 100_000}))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 34)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await command(pilot, "/cost")
        # 1k x $3 + 2k x $15 + 100k x $0.30 per million tokens (claude-sonnet-4-6)
        await wait_until(pilot, lambda: "Total cost:            $0.0630" in screen_text(app))
        assert "Cache read tokens:     100,000" in screen_text(app)


async def test_cost_of_a_model_without_a_price_shows_tokens_only(api, tmp_path):
    api.push(reply("hello", usage={"input_tokens": 1_000, "output_tokens": 2_000}))
    session = Session(
        model=AnthropicModel("qwen3-coder", base_url=api.url, api_key="test"),
        tools=default_tools(),
        cwd=tmp_path,
        policy=PermissionPolicy(mode="default", cwd=tmp_path),
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    app = AgentApp(session)
    async with app.run_test(size=(110, 34)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await command(pilot, "/cost")
        await wait_until(pilot, lambda: "Output tokens:         2,000" in screen_text(app))
        assert "Total cost" not in screen_text(app) and "$" not in screen_text(app)


async def test_retries_of_an_unreachable_server_show_on_the_status_line_and_leave_only_the_error(tmp_path):
    import socket

    from agent_tui.engine.loop.attempts import RetryPolicy
    from agent_tui.tui.widgets.transcript import Notice

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=f"http://127.0.0.1:{port}", api_key="test"),
        tools=default_tools(),
        cwd=tmp_path,
        policy=PermissionPolicy(mode="default", cwd=tmp_path),
        options=SessionOptions(retry=RetryPolicy(max_retries=3, base_delay=0.3, max_delay=0.3)),
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    app = AgentApp(session)
    async with app.run_test(size=(110, 34)) as pilot:
        await type_prompt(pilot, "hi")
        activity = app.query_one("#activity")
        await wait_until(pilot, lambda: activity.display and "retrying in" in str(activity.render()))
        assert f"Connection refused (127.0.0.1:{port})" in str(activity.render())
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        # Over: the line is gone, the transcript holds the error and no retry notice.
        assert not activity.display
        assert not [n for n in app.query(Notice) if n.has_class("-retry")]
        assert any(n.has_class("-error") for n in app.query(Notice))


async def test_model_lists_what_the_server_offers(api, tmp_path):
    api.models = ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"]
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(140, 30)) as pilot:
        await command(pilot, "/model")
        await wait_until(pilot, lambda: "Available: claude-opus-4-6, claude-sonnet-4-6, claude-haiku-4-5" in screen_text(app))
        assert "Model: claude-sonnet-4-6" in screen_text(app)


async def test_model_name_switches_the_model_the_header_and_the_system_prompt(api, tmp_path):
    api.push(reply("from opus"))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(140, 30)) as pilot:
        await command(pilot, "/model claude-opus-4-6")
        await wait_until(pilot, lambda: "Model set to claude-opus-4-6" in screen_text(app))
        assert app.header.model_label == "claude-opus-4-6"
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
    body = api.requests[0].body
    assert body["model"] == "claude-opus-4-6"
    system = "\n".join(b["text"] for b in body["system"]) if isinstance(body["system"], list) else body["system"]
    assert "Model: claude-opus-4-6\n</env>" in system and "claude-sonnet-4-6" not in system
    changes = [e for e in recorded if isinstance(e, ev.ModelChanged)]
    assert [(c.previous, c.model) for c in changes] == [("claude-sonnet-4-6", "claude-opus-4-6")]


async def test_permissions_mode_publishes_mode_changed_and_the_header_follows(api, tmp_path):
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(140, 30)) as pilot:
        await command(pilot, "/permissions plan")
        await wait_until(pilot, lambda: app.header.mode == "plan")
    assert [(e.previous, e.mode) for e in recorded if isinstance(e, ev.ModeChanged)] == [("default", "plan")]
