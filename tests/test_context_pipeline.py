"""The pipeline steps of engine/context/pipeline.py as pure functions: token accounting, the
tool-result budget, microcompact, cutting a history for a summary request, finding
the latest request, settings and the token-budget decision."""

from __future__ import annotations

import copy
import random

from agent_tui.engine.context.compaction import (
    LATEST_REQUEST_LABEL,
    fit_messages,
    latest_request,
    parse_prompt_too_long,
    summary_message,
)
from agent_tui.engine.context.pipeline import CLEARED_RESULT, apply_tool_result_budget, microcompact
from agent_tui.engine.context.window import CompactionSettings, ContextTracking, count_tokens, estimate_tokens
from agent_tui.engine.loop.budget import BudgetTracking, check_token_budget
from agent_tui.engine.loop.query import MAX_TOKENS_NUDGE, meta_user_message
from agent_tui.engine.messages import (
    INTERRUPTED_MESSAGE,
    assistant_message,
    check_history,
    tool_result_block,
    user_message,
)


def tool_round(n: int, name: str, output: str) -> list[dict]:
    tid = f"toolu_{n:03d}"
    return [
        assistant_message([{"type": "text", "text": f"step {n}"},
                           {"type": "tool_use", "id": tid, "name": name, "input": {"n": n}}]),
        user_message([tool_result_block(tid, output)]),
    ]


def history(*rounds: tuple[str, str], prompt: str = "do the work") -> list[dict]:
    messages = [user_message(prompt)]
    for n, (name, output) in enumerate(rounds):
        messages += tool_round(n, name, output)
    return messages


def results(messages: list[dict]) -> list[dict]:
    return [b for m in messages if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"]


# ---------------------------------------------------------------- accounting


def test_estimate_is_a_quarter_of_the_characters():
    assert estimate_tokens([user_message("x" * 400)]) == 100


def test_count_uses_the_last_usage_and_estimates_only_what_came_after():
    messages = history(("Read", "a" * 4000), ("Read", "b" * 4000))
    tracking = ContextTracking().with_usage({"input_tokens": 9000, "output_tokens": 50}, messages=4)

    assert count_tokens(messages, tracking, overhead=3000) == 9050 + estimate_tokens(messages[4:])
    assert count_tokens(messages, ContextTracking(), overhead=3000) == 3000 + estimate_tokens(messages)
    # A history shorter than what the usage covered (replaced meanwhile) is estimated whole.
    assert count_tokens(messages[:3], tracking, overhead=3000) == 3000 + estimate_tokens(messages[:3])


# ---------------------------------------------------------------- step 1: tool-result budget


def test_budget_saves_a_result_over_its_tool_cap_and_sends_a_preview_and_the_path(tmp_path):
    output = "".join(f"line {i} of the build log\n" for i in range(2000))  # ~50k characters
    messages = history(("Bash", output))
    before = copy.deepcopy(messages)

    out, record = apply_tool_result_budget(messages, settings=CompactionSettings(), save_dir=tmp_path / "results")

    assert messages == before, "the input is not mutated"
    [result] = results(out)
    saved = tmp_path / "results" / "toolu_000.txt"
    assert saved.read_text() == output
    assert result["content"].startswith(f"Output too large ({len(output):,} characters, over the 30,000-character limit for Bash)")
    assert f"Full output saved to: {saved}" in result["content"]
    assert "line 0 of the build log" in result["content"] and "line 1999 " not in result["content"]
    assert len(result["content"]) < 2_600
    assert record.items == 1 and record.paths == (str(saved),)
    # The record counts chars/4 per replaced block, the estimate rounds the whole history up once.
    assert abs(record.tokens_freed - (estimate_tokens(messages) - estimate_tokens(out))) <= record.items
    assert check_history(out) == []


def test_budget_caps_differ_per_tool(tmp_path):
    messages = history(("Grep", "g" * 25_000), ("Read", "r" * 60_000), ("mcp__db__query", "m" * 120_000))

    out, record = apply_tool_result_budget(messages, settings=CompactionSettings(), save_dir=tmp_path)

    grep, read, mcp = results(out)
    assert "limit for Grep" in grep["content"]
    assert read["content"] == "r" * 60_000
    assert "over the 100,000-character limit for mcp__db__query" in mcp["content"]
    assert record.items == 2


def test_budget_is_idempotent_and_shares_untouched_messages(tmp_path):
    messages = history(("Read", "small"), ("Bash", "x" * 40_000))
    once, _ = apply_tool_result_budget(messages, settings=CompactionSettings(), save_dir=tmp_path)
    twice, record = apply_tool_result_budget(once, settings=CompactionSettings(), save_dir=tmp_path)

    assert twice is once and record.tokens_freed == 0
    assert once[1] is messages[1] and once[2] is messages[2]


def test_budget_keeps_images_of_a_large_result(tmp_path):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    messages = history(("Read", "x"))
    messages[2] = user_message([tool_result_block("toolu_000", [{"type": "text", "text": "y" * 120_000}, image])])

    out, _ = apply_tool_result_budget(messages, settings=CompactionSettings(), save_dir=tmp_path)

    content = results(out)[0]["content"]
    assert content[0]["text"].startswith("Output too large") and content[1] == image


def test_budget_caps_come_from_settings(tmp_path):
    settings = CompactionSettings.from_settings({"toolResultCaps": {"Read": 1_000}, "previewChars": 100})
    out, _ = apply_tool_result_budget(history(("Read", "z" * 5_000)), settings=settings, save_dir=tmp_path)

    assert "over the 1,000-character limit for Read" in results(out)[0]["content"]


# ---------------------------------------------------------------- step 2: microcompact


def test_microcompact_clears_all_but_the_most_recent_results_of_file_and_shell_tools():
    messages = history(*[("Read", f"file {n} " * 200) for n in range(5)], ("TodoWrite", "todo " * 200),
                       ("Bash", "out " * 200))

    out, record = microcompact(messages, keep=2)

    contents = [r["content"] for r in results(out)]
    assert contents[:4] == [CLEARED_RESULT] * 4
    assert contents[4] == "file 4 " * 200 and contents[6] == "out " * 200
    assert contents[5] == "todo " * 200, "only tools whose results can be fetched again are cleared"
    assert record.items == 4 and record.tokens_freed > 0
    assert [r["tool_use_id"] for r in results(out)] == [r["tool_use_id"] for r in results(messages)]
    assert check_history(out) == []
    again, record = microcompact(out, keep=2)
    assert again is out and record.items == 0


# ---------------------------------------------------------------- compaction helpers


def test_fit_messages_never_separates_a_tool_use_from_its_result():
    rng = random.Random(7)
    messages = history(*[(rng.choice(["Read", "Bash", "Grep"]), "w" * rng.randint(100, 4000)) for _ in range(30)])
    messages += [assistant_message([{"type": "text", "text": "done"}]), user_message("next request")]
    messages += tool_round(99, "Read", "v" * 500)
    total = estimate_tokens(messages)

    for budget in range(0, total + 200, 150):
        kept = fit_messages(messages, budget)
        if kept is None:
            continue
        assert check_history(kept) == [], budget
        assert kept[-2:] == messages[-2:]
        assert kept is messages or estimate_tokens(kept) <= budget

    assert fit_messages(messages, total) is messages
    assert fit_messages(messages, 10) is None


def test_latest_request_skips_tool_results_nudges_hook_feedback_and_interruptions():
    messages = history(("Read", "x"), prompt="refactor the parser")
    messages += [meta_user_message(MAX_TOKENS_NUDGE), assistant_message([{"type": "text", "text": "ok"}]),
                 user_message("Stop hook feedback:\nrun the tests"), assistant_message([{"type": "text", "text": "k"}]),
                 user_message(INTERRUPTED_MESSAGE)]

    assert latest_request(messages) == [{"type": "text", "text": "refactor the parser"}]


def test_latest_request_inside_an_earlier_summary_is_the_one_it_kept():
    request = [{"type": "text", "text": "port it to Rust"}, {"type": "image", "source": {"type": "url", "url": "u"}}]
    earlier = summary_message("what happened", request, continue_work=True)
    messages = [earlier, *tool_round(1, "Bash", "built")]

    assert latest_request(messages) == request
    assert [b.get("text") for b in earlier["content"]][1] == LATEST_REQUEST_LABEL


def test_prompt_too_long_figures_are_read_from_the_error():
    assert parse_prompt_too_long("prompt is too long: 250000 tokens > 200000 maximum") == (250000, 200000)
    assert parse_prompt_too_long("Request exceeds the maximum size") is None


# ---------------------------------------------------------------- settings


def test_settings_follow_the_design_formula_and_the_settings_table():
    default = CompactionSettings()
    assert default.auto_compact_threshold(200_000, 32_000) == 200_000 - 20_000 - 13_000
    assert default.auto_compact_threshold(200_000, 8_000) == 200_000 - 8_000 - 13_000
    assert default.blocking_limit(200_000) == 190_000

    custom = CompactionSettings.from_settings(
        {"auto": False, "thresholdPercent": 70, "microcompactKeep": 2, "summaryMaxTokens": "lots", "unknown": 1}
    )
    assert (custom.auto, custom.auto_compact_threshold(200_000, 32_000), custom.microcompact_keep) == (False, 140_000, 2)
    assert custom.summary_max_tokens == default.summary_max_tokens


# ---------------------------------------------------------------- token budget


def test_token_budget_goes_on_under_the_threshold_and_nudges_past_it():
    assert check_token_budget(10_000, 8_000, BudgetTracking()).action == "go"

    verdict = check_token_budget(10_000, 9_400, BudgetTracking())

    assert verdict.action == "nudge"
    assert verdict.message.startswith("Token budget: 9,400 of 10,000 output tokens used (94%). Wrap up now")
    assert verdict.tracking == BudgetTracking(continuations=1, spent_at_last_check=9_400, small_in_a_row=0)


def test_token_budget_stops_when_spent_or_on_diminishing_returns():
    assert check_token_budget(10_000, 10_000, BudgetTracking()).action == "stop"

    tracking = BudgetTracking()
    actions = []
    for spent in (9_000, 9_100, 9_200, 9_300):
        verdict = check_token_budget(10_000, spent, tracking)
        actions.append(verdict.action)
        tracking = verdict.tracking
    assert actions == ["nudge", "nudge", "nudge", "stop"]
    assert "diminishing returns" in verdict.message

    # A continuation that still produces a lot resets the count.
    tracking = BudgetTracking()
    for spent in (9_000, 9_100, 9_700, 9_800):
        verdict = check_token_budget(20_000 // 2, spent, tracking)
        tracking = verdict.tracking
    assert verdict.action == "nudge" and tracking.small_in_a_row == 1
