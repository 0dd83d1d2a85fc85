"""The history invariants of docs/architecture.md §3 and their repair."""

from agent_tui.engine.memo import CheckState
from agent_tui.engine.messages import (
    MISSING_RESULT,
    assistant_message,
    check_history,
    check_history_since,
    ensure_tool_result_pairing,
    normalize_for_api,
    strip_thinking_signatures,
    text_block,
    tool_result_block,
    user_message,
)


def tool_use(id_, name="Read"):
    return {"type": "tool_use", "id": id_, "name": name, "input": {}}


def test_valid_history_has_no_problems():
    history = [
        user_message("hi"),
        assistant_message([text_block("let me look"), tool_use("t1"), tool_use("t2")]),
        user_message([tool_result_block("t1", "a"), tool_result_block("t2", "b")]),
        assistant_message([text_block("done")]),
    ]
    assert check_history(history) == []


def test_first_message_must_be_user():
    assert check_history([assistant_message([text_block("x")])]) == ["first message is not from the user"]


def test_consecutive_user_messages_merge_and_stay_valid():
    assert check_history([user_message("a"), user_message("b")]) == []


def test_missing_tool_result_is_reported():
    history = [user_message("hi"), assistant_message([tool_use("t1")]), user_message("next")]
    assert any("t1 has no tool_result" in p for p in check_history(history))


def test_duplicate_tool_result_is_reported():
    history = [
        user_message("hi"),
        assistant_message([tool_use("t1")]),
        user_message([tool_result_block("t1", "a"), tool_result_block("t1", "b")]),
    ]
    assert any("has 2 tool_results" in p for p in check_history(history))


def test_orphan_tool_result_is_reported():
    history = [user_message([tool_result_block("zz", "a")])]
    assert any("answers no tool_use" in p for p in check_history(history))


def test_trailing_tool_use_without_results_is_reported():
    history = [user_message("hi"), assistant_message([tool_use("t1")])]
    assert check_history(history)


def test_pairing_adds_missing_results_as_errors():
    history = [user_message("hi"), assistant_message([tool_use("t1"), tool_use("t2")]),
               user_message([tool_result_block("t2", "ok")])]
    repaired = ensure_tool_result_pairing(history)
    assert check_history(repaired) == []
    results = repaired[2]["content"]
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"]
    assert results[0]["is_error"] is True and results[0]["content"] == MISSING_RESULT


def test_pairing_drops_orphans_and_duplicates():
    history = [
        user_message([tool_result_block("ghost", "x"), text_block("hello")]),
        assistant_message([tool_use("t1")]),
        user_message([tool_result_block("t1", "a"), tool_result_block("t1", "b"), tool_result_block("t9", "c")]),
    ]
    repaired = ensure_tool_result_pairing(history)
    assert check_history(repaired) == []
    assert repaired[0]["content"] == [text_block("hello")]
    assert repaired[2]["content"] == [tool_result_block("t1", "a")]


def test_pairing_closes_a_trailing_tool_use():
    repaired = ensure_tool_result_pairing([user_message("hi"), assistant_message([tool_use("t1")])])
    assert check_history(repaired) == []
    assert repaired[-1]["content"][0]["tool_use_id"] == "t1"


def test_normalize_strips_private_keys_and_empty_text():
    block = {"type": "tool_use", "id": "t1", "name": "Read", "input": {}, "_parse_error": "bad"}
    history = [user_message("hi"), assistant_message([text_block(""), block]),
               user_message([tool_result_block("t1", "x", True)])]
    out = normalize_for_api(history)
    assert out[1]["content"] == [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]
    assert "_parse_error" in block  # input not mutated


def test_normalize_keeps_thinking_signature_byte_for_byte():
    sig = "EqQBCkYIBxgCKkA+/==\n"
    history = [user_message("hi"),
               assistant_message([{"type": "thinking", "thinking": "hmm", "signature": sig}, text_block("a")])]
    assert normalize_for_api(history)[1]["content"][0]["signature"] == sig


def test_strip_thinking_signatures_removes_thinking_blocks():
    history = [user_message("hi"),
               assistant_message([{"type": "thinking", "thinking": "hmm", "signature": "s"}, text_block("a")])]
    assert strip_thinking_signatures(history)[1]["content"] == [text_block("a")]


def test_the_end_of_prompt_check_finds_what_the_whole_check_finds_looking_only_at_what_is_new():
    state = CheckState()
    history = [user_message("hi")]
    for n in range(20):
        history = [*history, assistant_message([text_block(f"turn {n}"), tool_use(f"t{n}")]),
                   user_message([tool_result_block(f"t{n}", "ok")]), assistant_message([text_block("done")]),
                   user_message(f"next {n}")]
        assert check_history_since(history, state) == check_history(history) == []
    assert len(state.messages) == len(history)
    # A tool_use id reused far later, and a result that answers nothing: found as the whole check finds them.
    broken = [*history, assistant_message([tool_use("t3")]), user_message([tool_result_block("t3", "x")])]
    assert check_history_since(broken, state) == check_history(broken) != []
    orphan = [*history, assistant_message([text_block("x")]), user_message([tool_result_block("nope", "x")])]
    assert check_history_since(orphan, state) == check_history(orphan) != []
    # An earlier message replaced (a compaction): checked again from there.
    replaced = [*history[:3], user_message([tool_result_block("t9", "x")]), *history[4:]]
    assert check_history_since(replaced, state) == check_history(replaced) != []
    assert check_history_since(history, state) == []


def test_results_cleared_in_place_are_not_checked_again_but_a_changed_pairing_is(monkeypatch):
    """Microcompact replaces old result messages with cleared copies: the check takes each as the
    one it replaced (same role, content, tool ids) and looks only at what is new after them."""
    from agent_tui.engine import messages as m

    state = CheckState()
    history = [user_message("hi")]
    for n in range(50):
        history += [assistant_message([tool_use(f"t{n}")]), user_message([tool_result_block(f"t{n}", "long " * 50)])]
    history += [assistant_message([text_block("done")])]
    assert check_history_since(history, state) == []
    cleared = [user_message([tool_result_block(b["content"][0]["tool_use_id"], "[cleared]")])
               if b["role"] == "user" and isinstance(b["content"], list) and "tool_use_id" in b["content"][0] else b
               for b in history]
    cleared = [*cleared, user_message("next")]
    looked_at: list[int] = []
    problems = m._problems
    monkeypatch.setattr(m, "_problems", lambda merged, start, seen: looked_at.append(len(merged)) or problems(merged, start, seen))
    assert check_history_since(cleared, state) == check_history(cleared) == []
    assert looked_at and looked_at[0] <= 4, looked_at  # the last runs, not the whole history
    # A replacement whose tool ids differ is checked: a result answering another call is found.
    wrong = [*cleared[:2], user_message([tool_result_block("t9", "x")]), *cleared[3:]]
    assert check_history_since(wrong, state) == check_history(wrong) != []
