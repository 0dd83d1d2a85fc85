"""`--fallback-model` and `--max-budget-tokens` through the installed console script."""

from __future__ import annotations

import json

from tests.loopback import reply, status, tool_use
from tests.test_print_mode import env_for, run


def test_fallback_model_flag_switches_after_three_overloaded_errors(api, tmp_path):
    api.push(*[status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})] * 3,
             reply("from the fallback"))

    out = run(["-p", "hi", "--model", "claude-sonnet-4-6", "--fallback-model", "claude-haiku-4-5"],
              tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert out.stdout == "from the fallback\n"
    assert "agent-tui: Switched to claude-haiku-4-5 due to high demand for claude-sonnet-4-6" in out.stderr
    assert [r.body["model"] for r in api.requests] == ["claude-sonnet-4-6"] * 3 + ["claude-haiku-4-5"]


def test_max_budget_usd_stops_a_turn_before_the_request_that_would_go_past_it(api, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    # 10,000 input tokens of claude-sonnet-4-6 cost $0.03: the first request already crosses $0.01.
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}), usage={"input_tokens": 10_000}),
             reply("Never asked for."))

    out = run(["-p", "read the notes", "--max-budget-usd", "0.01", "--output-format", "json"], tmp_path,
              env_for(api.url))

    result = json.loads(out.stdout)
    assert out.returncode == 1 and "max-budget-usd" not in out.stderr
    assert result["subtype"] == "error_max_budget_usd" and result["terminal_reason"] == "max_budget_usd"
    assert result["is_error"] is True and "Reached the maximum budget ($0.01" in result["result"]
    assert result["total_cost_usd"] >= 0.03
    # The turn stopped before the Read's result went back to the model in a second request.
    assert len(api.requests) == 1


def test_max_budget_tokens_flag_stops_a_query_that_spent_it(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "echo hi"}), usage={"output_tokens": 1_200}))

    out = run(["-p", "work", "--max-budget-tokens", "1000", "--output-format", "json"], tmp_path, env_for(api.url))

    result = json.loads(out.stdout)
    assert out.returncode == 1
    assert result["terminal_reason"] == "token_budget" and result["is_error"] is True
    assert "token budget is spent (1,200 of 1,000 output tokens)" in result["result"]
    assert len(api.requests) == 1
