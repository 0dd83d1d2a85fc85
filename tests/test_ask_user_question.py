"""AskUserQuestion outside the TUI: the policy always asks a person for it, print mode (where no
one can answer) gives the model an error result saying so, and the schema's limits hold."""

from __future__ import annotations

import json

import pytest

from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.ask_user import AskUserQuestionTool
from agent_tui.tools.base import ToolContext, validate_input
from tests.loopback import reply, tool_use
from tests.test_print_mode import env_for, run

QUESTION = {"question": "Tabs or spaces?", "header": "Indent", "multiSelect": False,
            "options": [{"label": "Tabs", "description": "one per level"},
                        {"label": "Spaces", "description": "four per level"}]}


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "bypassPermissions"])
def test_the_policy_asks_a_person_in_every_mode_whatever_the_rules(mode):
    decision = PermissionPolicy(mode, allow=["AskUserQuestion"]).decide(AskUserQuestionTool(), {"questions": [QUESTION]})
    assert decision.behavior == "ask" and decision.suggested_rule is None


def test_a_deny_rule_still_refuses_it_and_dont_ask_mode_answers_nothing():
    tool, input = AskUserQuestionTool(), {"questions": [QUESTION]}
    assert PermissionPolicy("default", deny=["AskUserQuestion"]).decide(tool, input).behavior == "deny"
    dont = PermissionPolicy("dontAsk").decide(tool, input)
    assert dont.behavior == "deny" and "no one can answer" in dont.message


def test_print_mode_gives_the_model_an_error_result_saying_no_one_can_answer(api, tmp_path):
    api.push(reply(tool_use("AskUserQuestion", {"questions": [QUESTION]}, id="toolu_q")), reply("Spaces, then."))

    out = run(["-p", "format the file", "--output-format", "json"], tmp_path, env_for(api.url))

    result = json.loads(out.stdout)
    assert result["result"] == "Spaces, then." and not result["is_error"]
    [block] = [b for b in api.requests[1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert block["tool_use_id"] == "toolu_q" and block["is_error"] is True
    assert "non-interactive, so no one can answer" in str(block["content"])
    assert [d["tool_name"] for d in result["permission_denials"]] == ["AskUserQuestion"]


@pytest.mark.parametrize(("questions", "problem"), [
    ([], "between 1 and 4"),
    ([QUESTION] * 5, "between 1 and 4"),
    ([QUESTION, QUESTION], "unique"),
    ([{**QUESTION, "options": QUESTION["options"][:1]}], "needs 2-4 options"),
    ([{**QUESTION, "options": [QUESTION["options"][0]] * 2}], "labels"),
])
async def test_input_outside_the_schemas_limits_is_refused(tmp_path, questions, problem):
    message = await validate_input(AskUserQuestionTool(), {"questions": questions}, ToolContext(cwd=tmp_path))
    assert message is not None and problem in message


async def test_the_answers_of_the_permission_answer_are_the_result(tmp_path):
    tool = AskUserQuestionTool()
    answered = [r async for r in tool.call({"questions": [QUESTION], "answers": {"Tabs or spaces?": "Tabs"}},
                                           ToolContext(cwd=tmp_path))]
    unanswered = [r async for r in tool.call({"questions": [QUESTION]}, ToolContext(cwd=tmp_path))]
    assert answered[-1].content == ('User has answered your questions: "Tabs or spaces?"="Tabs". '
                                    "You can now continue with the user's answers in mind.")
    assert not answered[-1].is_error and unanswered[-1].is_error


async def test_a_program_answers_through_the_permission_request_with_the_answers_in_the_input(api, tmp_path):
    """As the Agent SDK's can_use_tool does: allow, with `answers` added to the input."""
    from agent_tui.engine import events as ev
    from agent_tui.engine.permissions.policy import PermissionAnswer
    from tests.engine_helpers import make_session
    from tests.loopback import text

    api.push(reply(tool_use("AskUserQuestion", {"questions": [QUESTION]}, id="toolu_q")), reply(text("Tabs.")))
    session = make_session(api.url, tmp_path)
    asked = []

    def answer(event):
        if isinstance(event, ev.PermissionRequested) and event.future is not None:
            asked.append(event.input)
            event.future.set_result(PermissionAnswer(
                "allow", updated_input={**event.input, "answers": {"Tabs or spaces?": "Tabs"}}))

    session.bus.add_listener(answer)
    await session.submit("indent?")

    assert asked == [{"questions": [QUESTION]}]
    [block] = [b for b in api.requests[1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert not block.get("is_error") and '"Tabs or spaces?"="Tabs"' in str(block["content"])
    # The history keeps the model's own input; the answers went to the tool.
    assert api.requests[1].body["messages"][-2]["content"][-1]["input"] == {"questions": [QUESTION]}
