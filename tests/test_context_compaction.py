"""The pre-request pipeline in a running session, on the real SDK against the loopback
server: tool-result budget, microcompact, autocompact (and its circuit breaker),
`/compact` and `/context`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_tui.engine import events as ev
from agent_tui.engine.context.compaction import CONTINUE_INSTRUCTION, LATEST_REQUEST_LABEL, SUMMARY_PREAMBLE
from agent_tui.engine.context.pipeline import CLEARED_RESULT
from agent_tui.engine.context.window import CompactionSettings
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import Recorder, make_session, system_text, tool_results, turn_notice, uncached
from tests.loopback import hang, reply, status, text, tool_use

PROMPT = "Read every note file and tell me what they have in common."


def is_summary_request(body: dict) -> bool:
    return "Write a detailed summary of the conversation so far" in json.dumps(body["messages"][-1])


def write_notes(folder: Path, count: int, lines: int = 100) -> list[Path]:
    paths = []
    for n in range(count):
        path = folder / f"note{n}.txt"
        path.write_text("".join(f"note {n} line {i}: {'lorem ipsum dolor sit amet ' * 2}\n" for i in range(lines)))
        paths.append(path)
    return paths


def reader(paths: list[Path], final: str, summary: str = "<summary>Notes read so far: 0-8.</summary>"):
    """A handler: one Read per request until every path was read, then `final`; summary
    requests get `summary`."""
    served = []

    def serve(body: dict, index: int):
        if is_summary_request(body):
            return reply(f"<analysis>Going through the notes.</analysis>\n{summary}")
        if len(served) < len(paths):
            n = len(served)
            served.append(n)
            return reply(text(f"Reading note {n}."), tool_use("Read", {"file_path": str(paths[n])}, id=f"toolu_read_{n:02d}"))
        return reply(final)

    return serve


def between(rec: Recorder, kind: type, after: ev.Event | None = None, before: ev.Event | None = None) -> list:
    events = [e for _, e in rec.events]
    start = events.index(after) + 1 if after is not None else 0
    end = events.index(before) if before is not None else len(events)
    return [e for e in events[start:end] if isinstance(e, kind)]


# ---------------------------------------------------------------- autocompact


async def test_autocompact_replaces_a_long_tool_history_with_a_summary_and_the_request_verbatim(api, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Answer in English.")
    paths = write_notes(tmp_path, 12)
    api.handler = reader(paths, "All twelve notes share a line format.")
    session = make_session(
        api.url, tmp_path, context_window=40_000, max_tokens=4_000,
        compaction=CompactionSettings(microcompact_percent=100, summary_max_tokens=2_000),
    )
    # Memory files are re-read after a compaction.
    (tmp_path / "AGENTS.md").write_text("Answer in French.")
    rec = Recorder(session)
    threshold = 40_000 - 4_000 - 13_000

    terminal = await session.submit(PROMPT)

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "All twelve notes share a line format."
    bodies = [r.body for r in api.requests]
    [s] = [i for i, b in enumerate(bodies) if is_summary_request(b)]
    summary_request, after = bodies[s], bodies[s + 1]
    # The summary request carries the whole history, every tool pair intact, and the §7 structure.
    assert summary_request["messages"][0]["content"] == [{"type": "text", "text": PROMPT}]
    assert check_history(summary_request["messages"]) == []
    asked = summary_request["messages"][-1]["content"][-1]["text"]
    for section in ("Primary request and intent", "Key technical concepts", "Files and code sections",
                    "Errors and fixes", "Pending tasks", "Current work", "Next step"):
        assert section in asked
    # The next request starts from one user message: the summary, then the request verbatim.
    [first] = after["messages"]
    texts = [b.get("text") for b in first["content"]]
    assert texts[0].startswith(SUMMARY_PREAMBLE) and "Notes read so far: 0-8." in texts[0]
    assert "Going through the notes" not in texts[0]
    assert texts[1:] == [LATEST_REQUEST_LABEL, PROMPT, CONTINUE_INSTRUCTION]
    assert len(json.dumps(after["messages"])) < len(json.dumps(bodies[s - 1]["messages"])) / 5
    assert "Answer in English." in system_text(bodies[s - 1]) and "Answer in French." in system_text(after)
    # The gauge: climbing towards the threshold, then down at the compaction.
    [compaction] = rec.of(ev.Compaction)
    assert compaction.trigger == "auto"
    # tokens_after counts the system prompt and the tool list (~7k of the ~8k) besides the summary
    assert compaction.tokens_before > threshold > compaction.tokens_after * 2.5
    before = [u.context_tokens for u in between(rec, ev.Usage, before=compaction)]
    later = [u.context_tokens for u in between(rec, ev.Usage, after=compaction)]
    assert before[-1] > threshold * 0.85
    # the notes read after the compaction add ~8.5k tokens to a request that starts with the system
    # prompt, the tool list (which grows with every tool) and the summary
    assert later[0] == compaction.tokens_after and max(later) - compaction.tokens_after < threshold * 0.4
    # The history left in the session is the compacted one, and valid.
    assert check_history(session.history) == []
    assert session.history[0] == uncached(first)
    assert "toolu_read_00" not in json.dumps(session.history)


async def test_autocompact_stops_trying_after_three_failures_and_says_so(api, tmp_path):
    script = [reply(tool_use("Bash", {"command": f"echo {n}"})) for n in range(4)] + [reply("done"), reply("again")]

    def serve(body, index):
        if is_summary_request(body):
            return status(400, "invalid_request_error", "summaries are unavailable")
        return script.pop(0)

    api.handler = serve
    session = make_session(api.url, tmp_path, compaction=CompactionSettings(threshold_percent=1))
    rec = Recorder(session)

    terminal = await session.submit("go")
    assert (await session.submit("and again")).result == "again"

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "done"
    assert sum(is_summary_request(r.body) for r in api.requests) == 3
    errors = [n.message for n in rec.of(ev.Notice) if n.kind == "error"]
    assert len(errors) == 3 and all(e.startswith("Auto-compact failed: the summary request failed") for e in errors)
    assert "failed 3 times in a row, so auto-compact is off" in errors[2] and "/compact" in errors[2]
    assert rec.of(ev.Compaction) == []
    assert check_history(session.history) == []


async def test_abort_while_autocompacting_ends_the_query_and_keeps_the_history(api, tmp_path):
    api.handler = lambda body, index: hang(after=3) if is_summary_request(body) else reply("unused")
    session = make_session(api.url, tmp_path, compaction=CompactionSettings(threshold_percent=1))
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("go"))
    while not any(n.kind == "compaction" for n in rec.of(ev.Notice)):
        await asyncio.sleep(0.01)
    await asyncio.to_thread(api.wait_requests, 1)

    session.abort()
    terminal = await asyncio.wait_for(task, 5)

    assert terminal.reason is TerminalReason.ABORTED_STREAMING
    assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)
    assert [m["content"][0]["text"] for m in session.history] == ["go", "[Request interrupted by user]"]
    assert len(api.requests) == 1 and rec.of(ev.Compaction) == []


# ---------------------------------------------------------------- steps 1 and 2 in a session


async def test_a_result_over_its_tool_cap_is_saved_and_replaced_by_a_preview(api, tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"needle number {i} in a line of padding text\n" for i in range(3000)))
    api.push(reply(tool_use("Grep", {"pattern": "needle", "output_mode": "content", "path": str(tmp_path / "big.txt")},
                            id="toolu_grep")),
             reply("found them"))
    session_dir = tmp_path / "session"
    session = make_session(api.url, tmp_path, session_dir=session_dir)

    await session.submit("find the needles")

    [result] = tool_results(api.requests[1].body)
    saved = session_dir / "tool-results" / "toolu_grep.txt"
    assert result["content"].startswith("Output too large (")
    assert "over the 20,000-character limit for Grep" in result["content"]
    assert f"Full output saved to: {saved}" in result["content"]
    assert len(result["content"]) < 2_600
    assert saved.read_text().count("needle number") == 3000
    assert "needle number 0 " in result["content"] and "needle number 2999 " not in result["content"]
    assert check_history(session.history) == []


async def test_microcompact_clears_old_file_tool_results_and_keeps_the_recent_ones(api, tmp_path):
    paths = write_notes(tmp_path, 7)
    api.handler = reader(paths, "done")
    session = make_session(
        api.url, tmp_path, context_window=40_000,
        compaction=CompactionSettings(microcompact_percent=30, microcompact_keep=3, threshold_percent=95),
    )
    rec = Recorder(session)

    await session.submit(PROMPT)

    results = [r["content"] for m in api.requests[-1].body["messages"] if m["role"] == "user"
               for r in m["content"] if r.get("type") == "tool_result"]
    assert len(results) == 7
    cleared = [c == CLEARED_RESULT for c in results]
    assert cleared[-3:] == [False, False, False] and cleared[0] and sum(cleared) >= 3
    assert all("note 6 line 0" in c for c in results[-1:])
    estimates = [u for u in rec.of(ev.Usage) if u.input_tokens == 0 and u.output_tokens == 0]
    assert estimates, "the gauge hears about the tokens microcompact freed"
    assert not any(is_summary_request(r.body) for r in api.requests)
    assert check_history(api.requests[-1].body["messages"]) == []


# ---------------------------------------------------------------- /compact and /context


async def test_manual_compact_with_instructions_replaces_the_history(api, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use tabs.")
    api.push(reply("The schema has three tables."), reply(tool_use("Bash", {"command": "echo migrated"})),
             reply("Migrated."), reply("<summary>Schema of three tables; migration done.</summary>"),
             reply("Next step noted."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    await session.submit("describe the schema")
    await session.submit("run the migration")
    (tmp_path / "AGENTS.md").write_text("Use spaces.")
    rec = Recorder(session)

    compacted = await session.compact("Focus on the database schema")

    summary_request = api.requests[3].body
    assert "Additional instructions from the user for this summary:\nFocus on the database schema" in (
        summary_request["messages"][-1]["content"][-1]["text"])
    assert compacted is not None and compacted.trigger == "manual"
    [message] = session.history
    texts = [b["text"] for b in message["content"]]
    assert texts == [texts[0], LATEST_REQUEST_LABEL, "run the migration"]
    assert "migration done" in texts[0]
    [event] = rec.of(ev.Compaction)
    assert (event.trigger, event.tokens_after) == ("manual", compacted.tokens_after)
    assert event.tokens_after < event.tokens_before
    assert rec.of(ev.Usage)[-1].context_tokens == compacted.tokens_after
    assert session.usage_totals["output_tokens"] > 0

    terminal = await session.submit("what next?")

    assert terminal.result == "Next step noted."
    body = api.requests[4].body
    assert uncached(body["messages"]) == [message, {"role": "user", "content": [{"type": "text", "text": "what next?"}]}]
    assert "Use spaces." in system_text(body) and "Use tabs." not in system_text(body)


async def test_manual_compact_of_an_empty_conversation_changes_nothing(api, tmp_path):
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    assert await session.compact() is None

    assert [n.message for n in rec.of(ev.Notice) if turn_notice(n)] == ["Nothing to compact yet."]
    assert api.requests == []


async def test_a_failed_manual_compact_keeps_the_history(api, tmp_path):
    api.push(reply("hello"), status(400, "invalid_request_error", "no summaries today"))
    session = make_session(api.url, tmp_path)
    await session.submit("hi")
    history = list(session.history)
    rec = Recorder(session)

    assert await session.compact() is None

    assert session.history == history
    [notice] = [n for n in rec.of(ev.Notice) if n.kind == "error"]
    assert notice.message == "Compaction failed: the summary request failed: no summaries today. The conversation is unchanged."


async def test_context_breakdown_counts_each_part_and_the_free_space(api, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Project rule: keep functions short. " * 20)
    (tmp_path / "a.txt").write_text("some file content\n" * 200)
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "a.txt")})), reply("read it"))
    session = make_session(api.url, tmp_path)
    await session.submit("read a.txt")

    exact = await session.context_breakdown()
    estimate = await session.context_breakdown(exact=False)

    assert len(api.count_requests) == 1
    counted = api.count_requests[0].body
    assert counted["messages"][:-1] == uncached(api.requests[-1].body["messages"])
    assert system_text(counted) == system_text(api.requests[-1].body)
    assert exact.exact and not estimate.exact
    assert exact.window == 200_000 and exact.free == 200_000 - exact.total
    assert dict(exact.rows()).keys() == {"System prompt", "Memory files", "Tools", "Messages", "Tool results", "Free space"}
    assert exact.memory_files >= len("Project rule: keep functions short. " * 20) // 4
    assert exact.tool_results > 3_600 // 4 > exact.messages > 0
    assert exact.tools > 1_000 and exact.system_prompt > 100
    parts = exact.system_prompt + exact.memory_files + exact.tools + exact.messages + exact.tool_results
    assert abs(exact.total - parts) < parts * 0.2
    # Without the endpoint: the last usage plus an estimate of what came after it.
    assert abs(estimate.total - exact.total) < exact.total * 0.2


async def test_microcompact_never_clears_results_the_model_has_not_seen(api, tmp_path):
    paths = write_notes(tmp_path, 9)
    reads = [tool_use("Read", {"file_path": str(p)}, id=f"toolu_read_{n}") for n, p in enumerate(paths)]
    api.push(reply(text("Reading all nine."), *reads), reply("They share a line format."))
    session = make_session(
        api.url, tmp_path, context_window=40_000,
        compaction=CompactionSettings(microcompact_percent=10, microcompact_keep=6, threshold_percent=95),
    )

    await session.submit(PROMPT)

    results = tool_results(api.requests[1].body)
    assert [r["tool_use_id"] for r in results] == [f"toolu_read_{n}" for n in range(9)]
    assert [f"note {n} line 99" in r["content"] for n, r in enumerate(results)] == [True] * 9
    assert not any(is_summary_request(r.body) for r in api.requests)
