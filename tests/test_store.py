"""The transcript store: records on disk, torn lines, repair, listing, replay."""

from __future__ import annotations

import json
import os
import stat

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.messages import (
    INTERRUPTED_MESSAGE,
    assistant_message,
    check_history,
    text_block,
    tool_result_block,
    user_message,
)
from agent_tui.engine.store import (
    SESSION_ENDED_MESSAGE,
    SESSION_ENDED_RESULT,
    SessionNotFound,
    TranscriptStore,
    find_session,
    list_sessions,
    load_transcript,
    project_dir,
    project_slug,
    replay_events,
    tail_start,
)
from tests.engine_helpers import Recorder, make_session, turn_notice
from tests.loopback import reply, text, tool_use


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    path = tmp_path / "data"
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(path))
    return path


def tool_turn(tid: str = "t1") -> list[dict]:
    return [
        assistant_message([text_block("Reading."), {"type": "tool_use", "id": tid, "name": "Read", "input": {}}]),
        user_message([tool_result_block(tid, "contents")]),
    ]


def finish(store: TranscriptStore) -> None:
    store.record_event(ev.QueryFinished(terminal_reason="completed", turns=1, usage={}, result=""))


def test_transcript_lives_under_the_data_dir_by_project_slug(data_dir, tmp_path):
    store = TranscriptStore(tmp_path / "my project", "abc")
    store.append_message(user_message("hi"))

    assert project_slug(tmp_path / "my project").endswith("-my-project")
    assert store.path == data_dir / "projects" / project_slug((tmp_path / "my project").resolve()) / "abc.jsonl"
    assert store.path.exists()
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert store.assets_dir == store.path.parent / "abc"


def test_messages_and_events_round_trip_one_json_line_each(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "s1")
    store.record_event(ev.UserMessage(text="hi"))
    messages = [user_message("hi"), *tool_turn(), assistant_message([text_block("Done.")])]
    for m in messages:
        store.append_message(m)
    store.record_event(ev.TextDelta(index=0, text="not kept"))
    finish(store)
    store.close()

    lines = [json.loads(line) for line in store.path.read_text().splitlines()]
    transcript = load_transcript(store.path)

    assert [r["type"] for r in lines] == ["session", "event", *["message"] * 4, "event"]
    assert lines[0]["session_id"] == "s1" and lines[0]["cwd"] == str(tmp_path.resolve())
    assert transcript.messages == messages and transcript.history == messages
    assert transcript.finished and not transcript.repaired


def test_an_idle_session_leaves_no_file(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "idle")
    store.record_event(ev.Notice(kind="info", message="hello"))
    store.close()

    assert not store.path.exists()


def test_a_torn_last_line_is_skipped_and_cut_before_the_next_append(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "torn")
    store.append_message(user_message("first"))
    store.close()
    with open(store.path, "ab") as f:
        f.write(b'{"type":"message","message":{"role":"assis')

    transcript = load_transcript(store.path)
    assert transcript.torn_tail and transcript.problems == []
    assert transcript.messages == [user_message("first")]

    again = TranscriptStore.reopen(transcript, tmp_path)
    again.append_message(assistant_message([text_block("second")]))
    again.close()
    reloaded = load_transcript(store.path)
    assert not reloaded.torn_tail
    assert reloaded.messages == [user_message("first"), assistant_message([text_block("second")])]


def test_a_corrupt_line_in_the_middle_is_reported_and_skipped(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "bad")
    store.append_message(user_message("one"))
    store.close()
    with open(store.path, "ab") as f:
        f.write(b"garbage\n")
    store = TranscriptStore.reopen(load_transcript(store.path), tmp_path)
    store.append_message(assistant_message([text_block("two")]))
    store.close()

    transcript = load_transcript(store.path)

    assert transcript.messages == [user_message("one"), assistant_message([text_block("two")])]
    assert transcript.problems == ["bad.jsonl line 3: not a valid record, skipped"]


def test_sync_appends_new_messages_and_truncates_rewritten_ones(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "sync")
    history = [user_message("a"), assistant_message([text_block("b")])]
    store.sync(history)
    store.sync([*history, user_message("c")])
    compacted = [user_message("summary of a, b, c"), assistant_message([text_block("ok")])]
    store.sync(compacted)
    store.close()

    records = [json.loads(line) for line in store.path.read_text().splitlines()]

    assert [r["type"] for r in records].count("message") == 5
    assert {"type": "truncate", "keep": 0} in records
    assert load_transcript(store.path).messages == compacted


def test_results_cleared_in_place_are_written_as_the_changed_messages_alone(data_dir, tmp_path):
    """Old tool results cleared (microcompact) change messages early in a long history: only
    those are written again, and loading and replaying give the history as it is now."""
    store = TranscriptStore(tmp_path, "cleared")
    store.record_event(ev.UserMessage(text="go"))
    history = [user_message("go"), *tool_turn("t1"), *tool_turn("t2"), assistant_message([text_block("done")])]
    store.sync(history)
    finish(store)
    cleared = list(history)
    cleared[2] = user_message([tool_result_block("t1", "[Old tool result content cleared]")])
    store.sync([*cleared, user_message("next")])
    store.close()

    records = [json.loads(line) for line in store.path.read_text().splitlines()]
    transcript = load_transcript(store.path)

    assert [(r["type"], r.get("at")) for r in records if r["type"] in ("replace", "truncate")] == [("replace", 2)]
    assert [r["type"] for r in records].count("message") == len(history) + 1
    assert transcript.messages == [*cleared, user_message("next")]
    reopened = TranscriptStore.reopen(transcript, tmp_path)
    assert reopened.messages == transcript.messages
    shown = [e.text for e in replay_events(transcript) if isinstance(e, ev.TextDelta)]
    assert shown == ["Reading.", "Reading.", "done"]


def test_a_rewritten_history_of_other_messages_is_truncated_and_written_again(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "other")
    history = [user_message("a"), *tool_turn("t1"), assistant_message([text_block("b")])]
    store.sync(history)
    changed = [user_message("a"), assistant_message([text_block("summary")]), *history[2:]]
    store.sync(changed)
    store.close()

    records = [json.loads(line) for line in store.path.read_text().splitlines()]

    assert {"type": "truncate", "keep": 1} in records
    assert load_transcript(store.path).messages == changed


def test_the_last_prompts_replay_alone_as_they_do_at_the_end_of_the_whole(data_dir, tmp_path):
    """A resumed session's last screen is replayed from its last prompts' records alone, and the
    records before them give the rest: together, the whole replay."""
    from tests.bench.sessions import write_session

    path = write_session(tmp_path, "long", 8)
    transcript = load_transcript(path)
    whole = replay_events(transcript)

    start = tail_start(transcript, 3)
    tail = replay_events(transcript, since=start)

    assert [e.text for e in tail if isinstance(e, ev.UserMessage)] == ["prompt 5: and the next module?",
                                                                        "prompt 6: and the next module?",
                                                                        "LAST-PROMPT 7"]
    assert replay_events(transcript, until=start) + tail == whole
    assert tail_start(transcript, 8) == 0


def test_a_rewritten_history_is_replayed_whole(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "rewritten")
    for n in range(5):
        store.record_event(ev.UserMessage(text=f"p{n}"))
        store.sync([*store.messages, user_message(f"p{n}"), assistant_message([text_block(f"a{n}")])])
    store.sync([user_message("summary"), assistant_message([text_block("ok")])])
    store.close()

    assert tail_start(load_transcript(store.path), 2) == 0


# ---------------------------------------------------------------- repair


def test_an_unfinished_turn_gets_results_for_its_tool_calls_and_a_marker(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "crash")
    store.append_message(user_message("go"))
    store.append_message(tool_turn()[0])
    store.close()

    transcript = load_transcript(store.path)

    assert not transcript.finished and transcript.repaired
    last = transcript.history[-1]
    assert last["content"][0] == tool_result_block("t1", SESSION_ENDED_RESULT, is_error=True)
    assert last["content"][-1] == text_block(SESSION_ENDED_MESSAGE)
    assert check_history(transcript.history) == []


def test_an_unanswered_prompt_keeps_its_text_and_gains_the_marker(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "dangling")
    store.append_message(user_message("please answer"))
    store.close()

    history = load_transcript(store.path).history

    assert history == [user_message([text_block("please answer"), text_block(SESSION_ENDED_MESSAGE)])]


def test_a_finished_turn_ending_on_a_user_message_is_left_as_it_was(data_dir, tmp_path):
    """A model error or an interrupt ends the turn on a user message: that is the history
    the original session would send next, so resuming must not change it."""
    store = TranscriptStore(tmp_path, "interrupted")
    messages = [user_message("go"), assistant_message([text_block("partial")]), user_message(INTERRUPTED_MESSAGE)]
    for m in messages:
        store.append_message(m)
    finish(store)
    store.close()

    transcript = load_transcript(store.path)

    assert transcript.finished and transcript.history == messages


# ---------------------------------------------------------------- listing


def test_sessions_are_listed_newest_first_with_first_prompt_and_turn_count(data_dir, tmp_path):
    for sid, prompts, mtime in (("old", ["first task\nmore detail", "again"], 1_000), ("new", ["other"], 2_000)):
        store = TranscriptStore(tmp_path, sid)
        for p in prompts:
            store.record_event(ev.UserMessage(text=p))
            store.append_message(user_message(p))
            store.append_message(assistant_message([{"type": "text", "text": "ok"}]))
        store.close()
        os.utime(store.path, (mtime, mtime))

    sessions = list_sessions(tmp_path)

    assert [(s.session_id, s.first_prompt, s.turn_count) for s in sessions] == [
        ("new", "other", 1), ("old", "first task", 2)]
    assert sessions[0].created.tzinfo is not None
    assert find_session(project_dir(tmp_path)) == sessions[0].path
    assert find_session(project_dir(tmp_path), "ol") == sessions[1].path


def test_a_run_that_never_got_an_answer_is_not_listed(data_dir, tmp_path):
    failed = TranscriptStore(tmp_path, "failed")
    failed.record_event(ev.UserMessage(text="hi"))
    failed.append_message(user_message("hi"))
    failed.record_event(ev.QueryFinished(terminal_reason="model_error", turns=1, usage={}, result="", is_error=True))
    failed.close()
    answered = TranscriptStore(tmp_path, "answered")
    answered.record_event(ev.UserMessage(text="hello"))
    answered.append_message(user_message("hello"))
    answered.append_message(assistant_message([{"type": "text", "text": "Hi!"}]))
    answered.close()

    assert [s.session_id for s in list_sessions(tmp_path)] == ["answered"]


def test_unknown_or_ambiguous_ids_are_refused(data_dir, tmp_path):
    for sid in ("abc1", "abc2"):
        TranscriptStore(tmp_path, sid).append_message(user_message("x"))

    with pytest.raises(SessionNotFound, match="ambiguous"):
        find_session(project_dir(tmp_path), "abc")
    with pytest.raises(SessionNotFound, match="no stored session"):
        find_session(project_dir(tmp_path), "zzz")
    assert list_sessions(tmp_path / "elsewhere") == []


# ---------------------------------------------------------------- a live session


async def test_a_session_writes_each_message_as_the_loop_completes_it(api, data_dir, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    sizes: list[int] = []

    def on_request(_received) -> None:
        sizes.append(len(load_transcript(path).messages) if path.exists() else 0)

    api.on_request = on_request
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "a.txt")})), reply("It says alpha."))
    session = make_session(api.url, tmp_path, persist=True)
    path = session.store.path

    await session.submit("read a.txt")
    await session.aclose()

    # Before each request, the messages it carries were already on disk.
    assert sizes == [1, 3]
    assert load_transcript(path).messages == session.history


async def test_clear_starts_a_new_transcript_and_keeps_the_old_one(api, data_dir, tmp_path):
    api.push(reply("one"), reply("two"))
    session = make_session(api.url, tmp_path, persist=True)
    await session.submit("first")
    first_id, first_path = session.session_id, session.store.path

    session.clear()
    await session.submit("second")
    await session.aclose()

    assert session.session_id != first_id
    assert [s.first_prompt for s in list_sessions(tmp_path)] == ["second", "first"]
    assert load_transcript(first_path).messages[-1] == assistant_message([text_block("one")])


async def test_replay_redraws_prompts_text_tools_denials_and_interrupts(api, data_dir, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    api.push(
        reply(
            text("Looking."),
            tool_use("Read", {"file_path": str(tmp_path / "a.txt")}, id="r1"),
            tool_use("Glob", {"pattern": "*.txt"}, id="g1"),
        ),
        reply(tool_use("Bash", {"command": "touch x"}, id="b1")),
        reply("Could not touch it."),
    )
    session = make_session(api.url, tmp_path, persist=True)
    session.policy.interactive = False
    live = Recorder(session)
    await session.submit("look around")
    await session.aclose()

    events = [e for e in replay_events(load_transcript(session.store.path))
              if turn_notice(e) or not isinstance(e, ev.Notice)]
    kinds = [type(e).__name__ for e in events]
    finished = {e.tool_use_id: e for e in events if isinstance(e, ev.ToolFinished)}

    assert kinds[0] == "UserMessage" and events[0].text == "look around"
    assert kinds.count("RequestStarted") == 3
    assert [e.text for e in events if isinstance(e, ev.TextDelta)] == ["Looking.", "Could not touch it."]
    assert [e.summary for e in events if isinstance(e, ev.ToolQueued)] == [e.summary for e in live.of(ev.ToolQueued)]
    assert finished == {e.tool_use_id: e for e in live.of(ev.ToolFinished)}
    assert finished["b1"].is_error
    assert kinds[-1] == "QueryFinished"


def test_replay_turns_interrupt_markers_into_interrupted_events(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "int")
    store.record_event(ev.UserMessage(text="go"))
    for m in (user_message("go"), assistant_message([text_block("part")]), user_message(INTERRUPTED_MESSAGE)):
        store.append_message(m)
    store.close()

    kinds = [type(e).__name__ for e in replay_events(load_transcript(store.path))]

    assert kinds == ["UserMessage", "RequestStarted", "TextDelta", "BlockCompleted", "Interrupted"]


async def test_a_history_given_to_a_new_session_is_written_before_its_first_prompt(api, data_dir, tmp_path):
    earlier = [user_message("earlier"), assistant_message([text_block("answer")])]
    seen: list[int] = []
    api.on_request = lambda _r: seen.append(len(load_transcript(session.store.path).messages))
    api.push(reply("now"))
    session = make_session(api.url, tmp_path, persist=True)
    session.history = list(earlier)

    await session.submit("next")
    await session.aclose()

    assert seen == [3]
    assert load_transcript(session.store.path).messages == session.history


async def test_a_transcript_that_cannot_be_written_is_reported_and_the_session_goes_on(api, data_dir, tmp_path):
    data_dir.parent.mkdir(exist_ok=True)
    data_dir.write_text("a file where the data folder should be")
    api.push(reply("answered anyway"))
    session = make_session(api.url, tmp_path, persist=True)
    rec = Recorder(session)

    terminal = await session.submit("hi")
    await session.aclose()

    assert terminal.result == "answered anyway"
    [notice] = [n for n in rec.of(ev.Notice) if n.kind == "error"]
    assert notice.message.startswith("Cannot save the transcript to ")


def test_a_last_record_that_only_lost_its_newline_is_kept(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "newline")
    store.append_message(user_message("first"))
    store.close()
    with open(store.path, "ab") as f:
        f.write(b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"second"}]}}')

    store = TranscriptStore.reopen(load_transcript(store.path), tmp_path)
    store.append_message(user_message("third"))
    store.close()

    assert [m["content"][0]["text"] for m in load_transcript(store.path).messages] == ["first", "second", "third"]


def test_resuming_a_repaired_transcript_again_does_not_repair_it_twice(data_dir, tmp_path):
    store = TranscriptStore(tmp_path, "twice")
    store.append_message(user_message("unanswered"))
    store.close()
    first = load_transcript(store.path)
    store = TranscriptStore.reopen(first, tmp_path)
    store.sync(first.history)
    store.close()

    assert load_transcript(store.path).history == first.history
