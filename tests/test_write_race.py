"""Write, Edit and MultiEdit write where the permission check looked, or refuse.

The policy decides on the file's resolved path.  A command running in the background may swap a
folder on that path for a symlink between the check and the write; the tools then refuse with a
clear error and nothing lands where the check did not look.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.tools._fileio import FileToolError
from agent_tui.tools.pinned import open_pinned, pin
from agent_tui.tools.write import WriteTool
from tests.engine_helpers import auto_answer, make_session, tool_results
from tests.loopback import reply, tool_use


def test_a_file_tool_decision_carries_the_path_it_was_made_on(tmp_path):
    proj = tmp_path / "proj"
    (proj / "real").mkdir(parents=True)
    (proj / "alias").symlink_to(proj / "real")
    policy = PermissionPolicy(mode="acceptEdits", cwd=proj)
    decision = policy.decide_call(WriteTool(), {"file_path": str(proj / "alias" / "a.txt"), "content": "x"})
    assert decision.behavior == "allow"
    assert decision.resolved == os.path.realpath(proj / "real" / "a.txt")
    outside = policy.decide_call(WriteTool(), {"file_path": str(tmp_path / "b.txt"), "content": "x"})
    assert outside.behavior == "ask" and outside.resolved == str(Path(os.path.realpath(tmp_path)) / "b.txt")


# ---------------------------------------------------------------- through the loop

CHANGED = "changed after permission was checked"


@dataclass
class Tree:
    proj: Path
    home: Path
    outside: Path


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Tree:
    """proj/ (the working directory) with sub/ and .agent-tui/, a home with .ssh/, a folder outside."""
    root = Path(os.path.realpath(tmp_path))
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    outside = root / "outside"
    outside.mkdir()
    proj = root / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / ".agent-tui").mkdir()
    return Tree(proj, home, outside)


def swap(folder: Path, to: Path) -> None:
    """What a command running in the background does: the folder moves away, a symlink takes its place."""
    folder.rename(folder.with_name(folder.name + ".orig"))
    folder.symlink_to(to, target_is_directory=True)


def when(kind: type[ev.Event], tool_use_id: str, action) -> Any:
    """A bus listener running `action` once, as `kind` is published for `tool_use_id`."""
    fired: list[bool] = []

    def on_event(event: ev.Event) -> None:
        if isinstance(event, kind) and event.tool_use_id == tool_use_id and not fired:
            fired.append(True)
            action()

    return on_event


async def run_calls(api, proj: Path, mode: str, *calls, listener=None, answer: str = "allow") -> list[dict]:
    """One model turn per call, then a closing text; the tool_result of each.  Prompts get `answer`."""
    api.push(*[reply(tool_use(name, input, id=f"t{i}")) for i, (name, input) in enumerate(calls)], reply("done"))
    session = make_session(api.url, proj, policy=PermissionPolicy(mode=mode, allow=["Bash(make:*)"]))
    if listener is not None:
        session.bus.add_listener(listener)
    auto_answer(session, PermissionAnswer(answer))
    try:
        await session.submit("change the files")
    finally:
        await session.aclose()
    assert check_history(session.history) == []
    return [tool_results(req.body)[0] for req in api.requests[1:]]


def refused(result: dict, path: Path) -> bool:
    return bool(result.get("is_error")) and f"The parent folder of {path} {CHANGED}" in result["content"]


async def test_write_refuses_when_its_folder_becomes_a_symlink_into_ssh_after_the_check(api, tree):
    target = tree.proj / "sub" / "authorized_keys"
    swap_it = when(ev.ToolStarted, "t0", lambda: swap(tree.proj / "sub", tree.home / ".ssh"))
    [result] = await run_calls(api, tree.proj, "acceptEdits",
                               ("Write", {"file_path": str(target), "content": "ssh-ed25519 AAAA attacker\n"}),
                               listener=swap_it)
    assert refused(result, target), result
    assert os.listdir(tree.home / ".ssh") == []
    assert os.listdir(tree.proj / "sub.orig") == []


async def test_write_refuses_when_swapped_while_the_prompt_waits(api, tree):
    target = tree.proj / "sub" / "notes.txt"
    swap_it = when(ev.PermissionRequested, "t0", lambda: swap(tree.proj / "sub", tree.outside))
    [result] = await run_calls(api, tree.proj, "default", ("Write", {"file_path": str(target), "content": "x\n"}),
                               listener=swap_it)
    assert refused(result, target), result
    assert os.listdir(tree.outside) == [] and os.listdir(tree.proj / "sub.orig") == []


async def test_bypass_write_cannot_be_redirected_into_the_agent_settings(api, tree):
    target = tree.proj / "sub" / "settings.local.json"
    swap_it = when(ev.ToolStarted, "t0", lambda: swap(tree.proj / "sub", tree.proj / ".agent-tui"))
    grant = '{"permissions": {"allow": ["Bash(*)"]}}'
    [result] = await run_calls(api, tree.proj, "bypassPermissions",
                               ("Write", {"file_path": str(target), "content": grant}), listener=swap_it)
    assert refused(result, target), result
    assert os.listdir(tree.proj / ".agent-tui") == []


async def test_write_refuses_when_the_folder_was_replaced_by_another_folder(api, tree):
    target = tree.proj / "sub" / "a.txt"

    def replace() -> None:
        (tree.proj / "sub").rename(tree.proj / "sub.orig")
        (tree.proj / "sub").mkdir()

    [result] = await run_calls(api, tree.proj, "acceptEdits", ("Write", {"file_path": str(target), "content": "x"}),
                               listener=when(ev.ToolStarted, "t0", replace))
    assert result["is_error"] and "is no longer the folder that was checked" in result["content"], result
    assert os.listdir(tree.proj / "sub") == [] and os.listdir(tree.proj / "sub.orig") == []


@pytest.mark.parametrize("tool", ["Edit", "MultiEdit"])
async def test_edits_refuse_to_read_or_write_through_a_swapped_folder(api, tree, tool):
    target = tree.proj / "sub" / "a.py"
    target.write_text("x = 1\n")
    # The same text outside: an edit that followed the swap would find its old_string there.
    (tree.outside / "a.py").write_text("x = 1\n")
    change = {"old_string": "x = 1", "new_string": "x = 2"}
    edit = change if tool == "Edit" else {"edits": [change]}
    swap_it = when(ev.ToolStarted, "t1", lambda: swap(tree.proj / "sub", tree.outside))
    results = await run_calls(api, tree.proj, "acceptEdits", ("Read", {"file_path": str(target)}),
                              (tool, {"file_path": str(target), **edit}), listener=swap_it)
    assert refused(results[1], target), results[1]
    assert (tree.outside / "a.py").read_text() == "x = 1\n"
    assert (tree.proj / "sub.orig" / "a.py").read_text() == "x = 1\n"


async def test_a_symlink_put_in_place_of_the_checked_file_is_not_followed(api, tree):
    target = tree.proj / "sub" / "a.txt"
    target.write_text("old\n")
    # The same text outside, so the read-state check alone would not notice the new link.
    (tree.outside / "a.txt").write_text("old\n")

    def relink() -> None:
        target.unlink()
        target.symlink_to(tree.outside / "a.txt")

    results = await run_calls(api, tree.proj, "acceptEdits", ("Read", {"file_path": str(target)}),
                              ("Write", {"file_path": str(target), "content": "new\n"}),
                              listener=when(ev.ToolStarted, "t1", relink))
    assert results[1]["is_error"] and f"{target} {CHANGED}" in results[1]["content"], results[1]
    assert (tree.outside / "a.txt").read_text() == "old\n"


# ---------------------------------------------------------------- no swap: writes as before


async def test_writes_new_files_keep_modes_and_make_new_folders(api, tree):
    script = tree.proj / "sub" / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    fresh = tree.proj / "sub" / "new.txt"
    deep = tree.proj / "new" / "deeper" / "f.txt"
    results = await run_calls(
        api, tree.proj, "acceptEdits",
        ("Read", {"file_path": str(script)}),
        ("Write", {"file_path": str(script), "content": "echo new\n"}),
        ("Write", {"file_path": str(fresh), "content": "hello\n"}),
        ("Write", {"file_path": str(deep), "content": "deep\n"}),
        ("Edit", {"file_path": str(fresh), "old_string": "hello", "new_string": "bye"}),
        ("MultiEdit", {"file_path": str(script), "edits": [{"old_string": "new", "new_string": "newer"}]}),
    )
    assert not any(r.get("is_error") for r in results), results
    assert script.read_text() == "echo newer\n" and stat.S_IMODE(script.stat().st_mode) == 0o750
    assert fresh.read_text() == "bye\n" and deep.read_text() == "deep\n"
    assert sorted(os.listdir(tree.proj / "sub")) == ["new.txt", "run.sh"]


async def test_symlinked_files_and_folders_the_policy_resolved_are_written_through(api, tree):
    (tree.proj / "real").mkdir()
    real = tree.proj / "real" / "real.txt"
    real.write_text("one\n")
    (tree.proj / "link.txt").symlink_to(real)
    (tree.proj / "alias").symlink_to(tree.proj / "real", target_is_directory=True)
    (tree.outside / "shared.txt").write_text("out\n")
    (tree.proj / "out.txt").symlink_to(tree.outside / "shared.txt")
    results = await run_calls(
        api, tree.proj, "default",
        ("Read", {"file_path": str(tree.proj / "link.txt")}),
        ("Edit", {"file_path": str(tree.proj / "link.txt"), "old_string": "one", "new_string": "two"}),
        ("Write", {"file_path": str(tree.proj / "alias" / "made.txt"), "content": "made\n"}),
        ("Read", {"file_path": str(tree.proj / "out.txt")}),
        # Resolved outside the project: the prompt (answered yes) was about the file outside.
        ("Write", {"file_path": str(tree.proj / "out.txt"), "content": "changed\n"}),
    )
    assert not any(r.get("is_error") for r in results), results
    assert (tree.proj / "link.txt").is_symlink() and real.read_text() == "two\n"
    assert (tree.proj / "real" / "made.txt").read_text() == "made\n"
    assert (tree.proj / "out.txt").is_symlink() and (tree.outside / "shared.txt").read_text() == "changed\n"


async def test_a_folder_still_to_be_made_that_appears_as_a_symlink_is_refused(api, tree):
    target = tree.proj / "new" / "deeper" / "f.txt"
    plant = when(ev.ToolStarted, "t0", lambda: (tree.proj / "new").symlink_to(tree.outside, target_is_directory=True))
    [result] = await run_calls(api, tree.proj, "acceptEdits", ("Write", {"file_path": str(target), "content": "x"}),
                               listener=plant)
    assert refused(result, target), result
    assert os.listdir(tree.outside) == []


def test_a_path_that_already_differs_from_the_checked_one_when_pinned_is_refused(tmp_path):
    root = Path(os.path.realpath(tmp_path))
    (root / "outside").mkdir()
    (root / "sub").symlink_to(root / "outside", target_is_directory=True)
    # The policy resolved sub/a.txt while sub was still a folder; by the pin it is a symlink.
    pinned = pin(root / "sub" / "a.txt", str(root / "sub" / "a.txt"))
    assert pinned.anchor_id is None
    with pytest.raises(FileToolError, match=f"The parent folder of {root / 'sub' / 'a.txt'} {CHANGED}"):
        open_pinned(pinned)
