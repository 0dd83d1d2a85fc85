"""AskUserQuestion: the model's questions are answered with keys in the prompt (arming as a
permission prompt does), and the answers reach the model as the tool result."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.tui.widgets.permission import ARM_QUIET, PermissionPrompt
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, type_prompt, wait_armed, wait_until

QUESTIONS = [
    {"question": "Which database should the service use?", "header": "Database", "multiSelect": False,
     "options": [{"label": "SQLite", "description": "one file, no server"},
                 {"label": "Postgres", "description": "a server, for many writers"}]},
    {"question": "Which checks should run before a commit?", "header": "Checks", "multiSelect": True,
     "options": [{"label": "ruff", "description": "lint"}, {"label": "mypy", "description": "types"},
                 {"label": "pytest", "description": "the tests"}]},
]


def _result_of(body, tool_use_id: str) -> dict:
    blocks = body["messages"][-1]["content"]
    return next(b for b in blocks if b.get("type") == "tool_result" and b["tool_use_id"] == tool_use_id)


async def test_two_questions_answered_by_keys_reach_the_model(api, tmp_path, monkeypatch):
    # The grace is stretched, so a loaded machine that stalls between the question's draw and the
    # key below cannot let it arm first (the key must come within the grace to test it).
    monkeypatch.setattr(PermissionPrompt, "arm_quiet", ARM_QUIET * 4)
    api.push(reply(text("A couple of questions first."),
                   tool_use("AskUserQuestion", {"questions": QUESTIONS}, id="toolu_ask")),
             reply(text("SQLite it is, with ruff and pytest.")))
    app, recorded = make_app(api, tmp_path, mode="bypassPermissions")
    async with app.run_test(size=(100, 36)) as pilot:
        await type_prompt(pilot, "set the project up")
        prompt = app.permission
        await wait_until(pilot, lambda: prompt.current is not None)
        # A key typed as the question appears answers nothing: it lands in the input.
        await pilot.press("2")
        assert not prompt.armed and prompt.question.answers == {}
        assert app.prompt_input.text == "2"
        await wait_armed(pilot, app)
        shown = screen_text(app)
        assert "Which database should the service use?" in shown and "(1 of 2)" in shown
        assert "1. SQLite" in shown and "2. Postgres" in shown and "Other" in shown
        await pilot.press("1")
        await wait_until(pilot, lambda: "Which checks should run" in screen_text(app))
        await pilot.press("3", "1", "2", "2")  # tick pytest, ruff, mypy, then untick mypy
        assert "[x] ruff" in screen_text(app) and "[ ] mypy" in screen_text(app)
        await pilot.press("enter")
        await wait_until(pilot, finished(recorded))
        assert app.prompt_input.text == "2"
    [asked] = [e for e in recorded if isinstance(e, ev.PermissionRequested)]
    assert asked.tool_name == "AskUserQuestion"
    result = _result_of(api.requests[1].body, "toolu_ask")
    assert not result.get("is_error")
    content = str(result["content"])
    assert '"Which database should the service use?"="SQLite"' in content
    assert '"Which checks should run before a commit?"="ruff, pytest"' in content


async def test_other_takes_the_persons_own_words_and_n_declines(api, tmp_path):
    one = [QUESTIONS[0]]
    api.push(reply(tool_use("AskUserQuestion", {"questions": one}, id="toolu_a")), reply(text("ok")),
             reply(tool_use("AskUserQuestion", {"questions": one}, id="toolu_b")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 36)) as pilot:
        await type_prompt(pilot, "pick one")
        await wait_armed(pilot, app)
        await pilot.press("y", "e")  # permission keys do nothing on a question
        assert app.permission.current is not None
        await pilot.press("o")
        await pilot.press(*"DuckDB")
        await pilot.press("enter")
        await wait_until(pilot, finished(recorded))
        await pilot.pause(ARM_QUIET)
        await type_prompt(pilot, "again")
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, finished(recorded, 2))
    assert '"Which database should the service use?"="DuckDB"' in str(_result_of(api.requests[1].body, "toolu_a"))
    # Declining is a no: the turn stops there, as after a no to a permission prompt.
    [declined] = [e for e in recorded if isinstance(e, ev.ToolFinished) and e.tool_use_id == "toolu_b"]
    assert declined.is_error and "doesn't want to proceed" in declined.preview
    assert len(api.requests) == 3


async def test_a_question_waiting_while_the_terminal_is_unfocused_says_so_in_the_notification(api, tmp_path,
                                                                                             monkeypatch):
    from textual import events

    monkeypatch.delenv("TMUX", raising=False)  # inside tmux the sequence is wrapped for passthrough
    api.push(reply(tool_use("AskUserQuestion", {"questions": [QUESTIONS[0]]}, id="toolu_q")), reply(text("ok")))
    app, recorded = make_app(api, tmp_path)
    written: list[str] = []
    app.notifier.write = written.append
    async with app.run_test(size=(100, 36)) as pilot:
        app.post_message(events.AppBlur())
        await wait_until(pilot, lambda: not app.app_focus)
        app.submit_prompt("ask me")
        await wait_until(pilot, lambda: app.permission.current is not None)
        assert len(written) == 1 and "The agent has a question for you" in written[0]
        assert "Permission needed" not in written[0]
