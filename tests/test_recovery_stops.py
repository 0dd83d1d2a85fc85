"""Stop conditions from the seeds: the context-limit stop with auto-compact off
(`blocking_limit`) and the token budget (`--max-budget-tokens`): a nudge to wrap
up past its threshold (`token_budget_continuation`), a stop when it is spent or
when continuations stop producing."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.engine.context.window import CompactionSettings
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import Recorder, make_session
from tests.loopback import reply, tool_use


def echo(n: int, output_tokens: int):
    return reply(tool_use("Bash", {"command": f"echo {n}"}, id=f"toolu_echo_{n}"), usage={"output_tokens": output_tokens})


def last_text(body: dict) -> str:
    return body["messages"][-1]["content"][-1].get("text", "")


async def test_with_auto_compact_off_a_full_context_stops_before_the_request(api, tmp_path):
    api.push(reply("a long answer", usage={"input_tokens": 19_000, "output_tokens": 200}))
    session = make_session(api.url, tmp_path, context_window=20_000, compaction=CompactionSettings(auto=False))
    await session.submit("first")
    rec = Recorder(session)

    terminal = await session.submit("second")

    assert terminal.reason is TerminalReason.BLOCKING_LIMIT
    assert terminal.error.startswith("The context is 96% full (19,20")
    assert "auto-compact is off" in terminal.error and "/compact" in terminal.error
    assert [n.message for n in rec.of(ev.Notice) if n.kind == "error"] == [terminal.error]
    assert len(api.requests) == 1
    assert check_history(session.history) == []


async def test_with_auto_compact_on_the_same_context_is_compacted_instead(api, tmp_path):
    # a window the tool definitions alone (some 7k tokens) leave room in: only the answer fills it
    api.push(reply("a long answer", usage={"input_tokens": 39_000, "output_tokens": 200}),
             reply("<summary>One long answer so far.</summary>"), reply("fine"))
    session = make_session(api.url, tmp_path, context_window=40_000, max_tokens=1_000,
                           compaction=CompactionSettings(summary_max_tokens=500))
    await session.submit("first")

    terminal = await session.submit("second")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "fine"
    assert len(api.requests[2].body["messages"]) == 1


async def test_past_the_budget_threshold_the_model_is_nudged_to_wrap_up(api, tmp_path):
    api.push(echo(1, 950), reply("wrapped up", usage={"output_tokens": 20}))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000, policy=PermissionPolicy(mode="bypassPermissions"))

    terminal = await session.submit("work")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "wrapped up"
    assert last_text(api.requests[1].body) == (
        "Token budget: 950 of 1,000 output tokens used (95%). Wrap up now: finish the step you are on, "
        "skip anything optional, and give your final answer."
    )
    assert api.requests[1].body["messages"][-2]["content"][0]["type"] == "tool_result"
    assert check_history(session.history) == []


async def test_under_the_budget_threshold_turns_go_on_without_a_nudge(api, tmp_path):
    api.push(echo(1, 100), reply("done", usage={"output_tokens": 20}))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000, policy=PermissionPolicy(mode="bypassPermissions"))

    await session.submit("work")

    assert api.requests[1].body["messages"][-1]["content"][0]["type"] == "tool_result"
    assert "Token budget" not in str(api.requests[1].body["messages"])


async def test_a_spent_budget_ends_the_query(api, tmp_path):
    api.push(echo(1, 1_200))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("work")

    assert terminal.reason is TerminalReason.TOKEN_BUDGET
    assert terminal.error == "Stopped: the token budget is spent (1,200 of 1,000 output tokens)."
    assert [n.message for n in rec.of(ev.Notice) if n.kind == "error"] == [terminal.error]
    assert len(api.requests) == 1
    assert check_history(session.history) == []
    assert session.history[-1]["content"][0]["type"] == "tool_result"


async def test_three_small_continuations_in_a_row_stop_on_diminishing_returns(api, tmp_path):
    api.push(echo(1, 9_000), echo(2, 100), echo(3, 100), echo(4, 100))
    session = make_session(api.url, tmp_path, max_budget_tokens=10_000, policy=PermissionPolicy(mode="bypassPermissions"))

    terminal = await session.submit("work")

    assert terminal.reason is TerminalReason.TOKEN_BUDGET
    assert terminal.error.startswith("Stopped on diminishing returns: 3 continuations in a row")
    assert len(api.requests) == 4
    assert [last_text(r.body).startswith("Token budget:") for r in api.requests] == [False, True, True, True]
    assert check_history(session.history) == []


# ---------------------------------------------------------------- the budget where the model stops


async def test_a_budget_spent_by_the_final_answer_ends_as_token_budget(api, tmp_path):
    api.push(reply("a very long final answer", usage={"output_tokens": 1_200}))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000)

    terminal = await session.submit("explain")

    assert terminal.reason is TerminalReason.TOKEN_BUDGET
    assert terminal.error == "Stopped: the token budget is spent (1,200 of 1,000 output tokens)."
    assert terminal.result == "a very long final answer"
    assert check_history(session.history) == []


async def test_a_stop_hook_cannot_continue_past_a_spent_budget(api, tmp_path):

    hook = tmp_path / "more.sh"
    hook.write_text('#!/bin/sh\necho \'{"decision": "block", "reason": "Do one more thing"}\'\n')
    hook.chmod(0o755)
    api.push(reply("first answer", usage={"output_tokens": 1_200}), reply("never sent"))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000,
                           hooks={"Stop": [{"hooks": [{"type": "command", "command": str(hook)}]}]})

    terminal = await session.submit("explain")

    assert terminal.reason is TerminalReason.TOKEN_BUDGET
    assert len(api.requests) == 1 and api.pending == 1
    assert check_history(session.history) == []


async def test_a_stop_hook_continuation_past_the_threshold_carries_the_wrap_up_nudge(api, tmp_path):

    hook = tmp_path / "more.sh"
    hook.write_text('#!/bin/sh\n[ -e done ] && exit 0\ntouch done\necho \'{"decision": "block", "reason": "Do one more thing"}\'\n')
    hook.chmod(0o755)
    api.push(reply("first answer", usage={"output_tokens": 950}), reply("wrapped up", usage={"output_tokens": 20}))
    session = make_session(api.url, tmp_path, max_budget_tokens=1_000,
                           hooks={"Stop": [{"hooks": [{"type": "command", "command": str(hook)}]}]})

    terminal = await session.submit("explain")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "wrapped up"
    assert last_text(api.requests[1].body).startswith("Token budget: 950 of 1,000 output tokens used (95%).")
