"""Checkpoints and rewind, headless: every prompt starts a checkpoint in a shadow repository
outside the project; rewinding to a prompt restores the files (Edit's and Bash's changes alike)
and the conversation to just before it, leaves ignored and large files and the project's own
.git alone, reports changes made outside agent-tui first, and survives a resume."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.checkpoints import (
    CheckpointError,
    Checkpoints,
    HistoryDigest,
    history_digest,
    message_shape,
    rewind,
)
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.store import load_transcript, replay_events
from tests.engine_helpers import make_session
from tests.loopback import reply, text, tool_use

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                                reason="git is not installed")


def _git_state(project: Path) -> str:
    """Everything of the project's own repository a checkpoint could disturb."""
    out = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=project, capture_output=True, text=True)
    files = sorted(str(p.relative_to(project)) for p in (project / ".git").rglob("*"))
    return out.stdout + "\n".join(files)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "data"))
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "a.py").write_text("A = 1\n")
    (project / "b.py").write_text("B = 1\n")
    (project / "c.txt").write_text("c one\n")
    (project / ".gitignore").write_text("build/\n")
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text("*.local\n")
    (project / "me.local").write_text("private 1\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_text("built 1\n")
    return project


def _edit(path: Path, old: str, new: str, n: int) -> list:
    return [reply(tool_use("Read", {"file_path": str(path)}, id=f"toolu_r{n}")),
            reply(tool_use("Edit", {"file_path": str(path), "old_string": old, "new_string": new}, id=f"toolu_e{n}")),
            reply(text(f"edited {path.name}"))]


async def _three_prompts(api, project: Path):
    api.push(*_edit(project / "a.py", "A = 1", "A = 2", 1), *_edit(project / "b.py", "B = 1", "B = 2", 2),
             reply(tool_use("Bash", {"command": "echo 'c two' > c.txt && echo built 2 > build/out.bin && "
                                            "echo private 2 > me.local"}, id="toolu_b")),
             reply(text("ran it")))
    session = make_session(api.url, project, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    for prompt in ("change a", "change b", "change c"):
        await session.submit(prompt)
    return session


async def test_rewinding_to_the_second_prompt_restores_files_and_conversation(api, project):
    git_before = _git_state(project)
    session = await _three_prompts(api, project)
    assert (project / "c.txt").read_text() == "c two\n"
    checkpoints = session.checkpoints.list()
    assert [c.prompt for c in checkpoints] == ["change a", "change b", "change c"]
    history_after_first = checkpoints[1].history_len

    result = rewind(session, checkpoints[1])

    assert sorted(result.files) == ["b.py", "c.txt"] and result.conversation
    assert (project / "a.py").read_text() == "A = 2\n"
    assert (project / "b.py").read_text() == "B = 1\n"
    assert (project / "c.txt").read_text() == "c one\n"
    assert (project / "build" / "out.bin").read_text() == "built 2\n"  # ignored: never checkpointed
    assert (project / "me.local").read_text() == "private 2\n"  # the project's info/exclude counts too
    assert len(session.history) == history_after_first
    assert [b["text"] for b in session.history[0]["content"]] == ["change a"]
    assert "change b" not in str(session.history)
    assert [c.prompt for c in session.checkpoints.list()] == ["change a"]
    assert _git_state(project) != ""  # the project's repository is still there...
    assert _git_state(project).split("\n", 1)[1] == git_before.split("\n", 1)[1]  # ...its .git unchanged

    # The next prompt goes on from there, and the model sees the rewound conversation.
    api.push(reply(text("fine")))
    await session.submit("what now?")
    sent = api.requests[-1].body["messages"]
    assert "change b" not in str(sent) and "change a" in str(sent) and "what now?" in str(sent)

    # A resumed session redraws the conversation as the rewind left it, the prompt after it included.
    replayed = replay_events(load_transcript(session.store.path))
    assert [e.text for e in replayed if isinstance(e, ev.UserMessage)] == ["change a", "what now?"]
    shown = "".join(e.text for e in replayed if isinstance(e, ev.TextDelta))
    assert "edited a.py" in shown and "fine" in shown and "edited b.py" not in shown and "ran it" not in shown


async def test_a_change_made_outside_agent_tui_since_the_checkpoint_is_reported_first(api, project):
    session = await _three_prompts(api, project)
    (project / "b.py").write_text("B = 'by hand'\n")
    (project / "notes.md").write_text("mine\n")
    checkpoints = session.checkpoints.list()

    assert session.checkpoints.changed_outside(checkpoints[1]) == ["b.py", "notes.md"]
    assert session.checkpoints.changed_outside(checkpoints[2]) == ["b.py", "notes.md"]
    rewind(session, checkpoints[2], conversation=False)
    # The restore was agent-tui's: nothing counts as changed outside any more.
    assert session.checkpoints.changed_outside(checkpoints[2]) == []
    assert not (project / "notes.md").exists() and (project / "b.py").read_text() == "B = 2\n"
    assert len(session.checkpoints.list()) == 3  # only the code went back


async def test_large_files_are_skipped_and_checkpoints_survive_a_resume(api, project):
    (project / "big.dat").write_bytes(b"x" * 2048)
    session = await _three_prompts(api, project)
    (project / "big.dat").write_bytes(b"y" * 4096)
    session_id = session.session_id
    await session.aclose()

    again = make_session(api.url, project, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    again.checkpoints.max_file_bytes = 1024
    again.resume(session_id)
    assert [c.prompt for c in again.checkpoints.list()] == ["change a", "change b", "change c"]
    rewind(again, again.checkpoints.list()[0])
    assert (project / "a.py").read_text() == "A = 1\n" and again.history == []
    assert (project / "big.dat").read_bytes() == b"y" * 4096


def test_a_compacted_conversation_cannot_go_back_but_the_code_can(project):
    checkpoints = Checkpoints(project, "s1")
    first = checkpoints.begin("one", [{"role": "user", "content": "x"}])
    (project / "a.py").write_text("A = 9\n")
    assert checkpoints.conversation_at(first, [{"role": "user", "content": "summary"}]) is None

    class Stub:  # the two attributes rewind uses of a session
        history = [{"role": "user", "content": "summary"}]
        store = None

    Stub.checkpoints = checkpoints
    with pytest.raises(CheckpointError, match="compacted"):
        rewind(Stub, first)
    assert rewind(Stub, first, conversation=False).files == ["a.py"]
    assert (project / "a.py").read_text() == "A = 1\n"


def test_no_checkpoints_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_TUI_DATA_DIR", str(tmp_path / "data"))
    session = make_session("http://127.0.0.1:9", tmp_path, persist=True)
    assert session.checkpoints is None


def test_two_sessions_in_one_project_take_checkpoints_at_once_without_spoiling_them(project):
    import threading

    first, second = Checkpoints(project, "s1"), Checkpoints(project, "s2")
    taken: dict[str, list[str]] = {"s1": [], "s2": []}

    def take(checkpoints: Checkpoints) -> None:
        for n in range(5):
            taken[checkpoints.session_id].append(checkpoints.begin(f"p{n}", []).commit)

    threads = [threading.Thread(target=take, args=(c,)) for c in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (project / "a.py").write_text("changed\n")
    for checkpoints in (first, second):
        assert len(checkpoints.list()) == 5
        assert checkpoints.changes(checkpoints.list()[-1]) == ["a.py"]


def test_a_checkpoint_digests_only_the_messages_new_since_the_last_one_and_gives_the_whole_historys_digest():
    hashed: list[object] = []

    def noted(message):
        hashed.append(message)
        return message_shape(message)

    digest = HistoryDigest(noted)
    history: list[dict] = []
    for n in range(30):
        history = [*history, {"role": "user" if n % 2 else "assistant", "content": [{"type": "text", "text": f"é {n}"}]}]
        assert digest(history) == history_digest(history)
    assert len(hashed) == 30  # each message once
    # A compaction, a rewind or a cleared tool result replaces or drops messages: only a message
    # new to the digest is hashed, and the digest is the whole history's all the same.
    replaced = [*history[:10], {"role": "user", "content": "summary"}, *history[11:]]
    hashed.clear()
    assert digest(replaced) == history_digest(replaced) and hashed == [replaced[10]]
    assert digest(history) == history_digest(history) and hashed == [replaced[10], history[10]]
    assert digest(history[:4]) == history_digest(history[:4])
    assert digest([]) == history_digest([])
    assert len({history_digest(history), history_digest(replaced), history_digest(history[:4])}) == 3


def test_a_checkpoint_made_before_the_per_message_digest_still_takes_the_conversation_back(tmp_path):
    """Checkpoints stored by earlier versions hold sha256 of the history's JSON: still recognised."""
    from agent_tui.engine.checkpoints import Checkpoint, whole_dump_digest

    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"},
               {"role": "user", "content": "more"}]
    checkpoints = Checkpoints(tmp_path, "s", root=tmp_path / "cp")
    old = Checkpoint(2, "more", "", 2, whole_dump_digest(history[:2]), 0.0,
                     history_shape=whole_dump_digest([message_shape(m) for m in history[:2]]))
    assert checkpoints.conversation_at(old, history) == history[:2]
    changed = [history[0], {"role": "assistant", "content": "other"}, history[2]]
    assert checkpoints.conversation_at(old, changed) is None


async def test_the_history_a_prompt_starts_from_is_digested_off_the_event_loops_thread(api, project, monkeypatch):
    """Each prompt's checkpoint digests the conversation before it; the end of the prompt before
    (or `prepare_history`, for a resumed one) already hashed it in a worker thread."""
    import json
    import threading

    import agent_tui.engine.checkpoints as checkpoints_module

    on_loop: list[object] = []
    loop_thread = threading.get_ident()

    class Recording:
        def __getattr__(self, name: str) -> object:
            return getattr(json, name)

        @staticmethod
        def dumps(value: object, **kwargs: object) -> str:
            if kwargs.get("sort_keys") and threading.get_ident() == loop_thread:
                on_loop.append(value)
            return json.dumps(value, **kwargs)

    monkeypatch.setattr(checkpoints_module, "json", Recording())
    api.push(reply(text("one")), reply(text("two")), reply(text("three")))
    session = make_session(api.url, project, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    for prompt in ("first", "second"):
        await session.submit(prompt)
    await session.aclose()
    resumed = make_session(api.url, project, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    resumed.resume()
    await resumed.prepare_history()
    await resumed.submit("third")
    await resumed.aclose()

    assert [c.history_len for c in resumed.checkpoints.list()] == [0, 2, 4]
    assert on_loop == []


async def test_snapshots_run_off_the_event_loop_and_a_tool_waits_for_its_prompts_checkpoint(api, project, monkeypatch):
    # A snapshot walks the whole working tree (a second or so in a 50,000-file project): it runs in
    # the checkpoints' thread, and the prompt's first tool waits for it, so the checkpoint holds the
    # files as they were before the prompt even when the snapshot is slower than the model.
    import threading
    import time

    loop_thread = threading.get_ident()
    taken: list[tuple[str, bool]] = []
    real = Checkpoints.snapshot

    def slow_snapshot(self, message):
        time.sleep(0.3)
        taken.append((message, threading.get_ident() == loop_thread))
        return real(self, message)

    monkeypatch.setattr(Checkpoints, "snapshot", slow_snapshot)
    api.push(reply(tool_use("Write", {"file_path": str(project / "new.py"), "content": "NEW = 1\n"}, id="toolu_w")),
             reply(text("wrote it")))
    session = make_session(api.url, project, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    await session.submit("write new.py")
    assert (project / "new.py").read_text() == "NEW = 1\n"
    assert taken == [("before prompt 1", False), ("after prompt 1", False)]
    [checkpoint] = session.checkpoints.list()
    assert checkpoint.after is not None  # the prompt ended once its 'after' snapshot was taken
    assert session.checkpoints.changes(checkpoint) == ["new.py"]  # not in the 'before' commit
    await session.aclose()


async def test_the_conversation_goes_back_past_old_tool_results_cleared_since(api, project):
    # Past 30% of the window here (60% by default) old tool results are cleared in the history
    # itself: the conversation before a prompt is still the same conversation, its old results
    # now cleared, and a rewind takes it back; a change to what was said is not.
    from agent_tui.engine.context.pipeline import CLEARED_RESULT
    from agent_tui.engine.context.window import CompactionSettings
    from tests.test_context_compaction import write_notes

    paths = write_notes(project, 7)
    api.push(*(reply(tool_use("Read", {"file_path": str(paths[n])}, id=f"toolu_a{n}")) for n in range(3)),
             reply(text("three read")),
             *(reply(tool_use("Read", {"file_path": str(paths[n])}, id=f"toolu_b{n}")) for n in range(3, 7)),
             reply(text("seven read")))
    session = make_session(api.url, project, context_window=40_000, persist=True,
                           policy=PermissionPolicy(mode="bypassPermissions"),
                           compaction=CompactionSettings(microcompact_percent=30, microcompact_keep=3,
                                                         threshold_percent=95))
    await session.submit("read three")
    await session.submit("read four more")
    results = [b["content"] for m in session.history if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results[0] == CLEARED_RESULT  # the first prompt's results, cleared during the second
    second = session.checkpoints.list()[1]
    assert second.history_len == 8

    done = rewind(session, second, code=False)

    assert done.conversation and len(session.history) == 8
    assert session.history[-1]["content"][-1]["text"] == "three read"
    said = [dict(m) for m in session.history]
    said[0] = {**said[0], "content": "read something else"}
    assert session.checkpoints.conversation_at(second, said) is None
    await session.aclose()
