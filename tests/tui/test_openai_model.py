"""The TUI on an OpenAI-compatible server chosen by settings: /model lists GET /v1/models,
and a switched model is what the next chat completion asks for."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from tests.engine_helpers import FAST_RETRY
from tests.openai_loopback import OpenAILoopback, chat
from tests.test_openai_provider import KEY_ENV, write_settings

from .helpers import finished, screen_text, type_prompt, wait_until


def openai_app(srv: OpenAILoopback, cwd, monkeypatch) -> tuple[AgentApp, list[ev.Event]]:
    from agent_tui.cli import choose_model
    from agent_tui.config import load_settings

    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    write_settings(cwd, srv.url)
    session = Session(model=choose_model(load_settings(cwd)), tools=default_tools(), cwd=cwd,
                      policy=PermissionPolicy(mode="default", cwd=cwd), options=SessionOptions(retry=FAST_RETRY))
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    return AgentApp(session), recorded


async def test_model_lists_the_servers_models_and_a_switch_reaches_the_next_request(tmp_path, monkeypatch):
    with OpenAILoopback() as srv:
        srv.models = ["gpt-4.1-mini", "gpt-4.1", "o4-mini"]
        srv.push(chat("from the mini model"))
        app, recorded = openai_app(srv, tmp_path, monkeypatch)
        async with app.run_test(size=(140, 30)) as pilot:
            await type_prompt(pilot, "/model")
            await wait_until(pilot, lambda: "Available: gpt-4.1, gpt-4.1-mini, o4-mini" in screen_text(app))
            assert "Model: gpt-4.1" in screen_text(app)
            await type_prompt(pilot, "/model gpt-4.1-mini")
            await wait_until(pilot, lambda: "Model set to gpt-4.1-mini" in screen_text(app))
            await type_prompt(pilot, "hi")
            await wait_until(pilot, finished(recorded))
            await wait_until(pilot, lambda: "from the mini model" in screen_text(app))
        assert [r.body["model"] for r in srv.requests] == ["gpt-4.1-mini"]
        assert srv.requests[0].path == "/v1/chat/completions"
