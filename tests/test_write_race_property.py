"""Property: however a folder on a file tool's path is swapped for a symlink, nothing lands outside
the project (nor in its agent settings) unless the person approved that very place.

Hypothesis draws "symlink swaps": which component of `proj/a/b/c/f.txt` is swapped (a folder, or the
file itself; for a new file, a symlink where it is to be made), to where (a copy of the tree outside the project holding the same text, `~/.ssh`, the
project's `.agent-tui/`), and when (as the call is queued, before the permission check; while its
permission prompt waits; as it starts, after the check), for Write (of an existing or a new file),
Edit and MultiEdit in the modes that matter.  Everything runs for real: the loopback model server
streams the calls, the executor and the policy decide, and a bus listener makes the swap as a command
running in the background would.  The person approves what is inside the project and refuses what
the prompt says is outside it or dangerous.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from agent_tui.engine import events as ev
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from tests.counting import count, examples
from tests.engine_helpers import make_session
from tests.loopback import LoopbackServer, reply, tool_use

FOLDERS = ("a", "b", "c")
TEXT = "value = 1\n"
CHANGED = "changed after permission was checked"
EVENTS = {"queued": ev.ToolQueued, "asked": ev.PermissionRequested, "started": ev.ToolStarted}


def scripted(body: dict[str, Any], index: int):
    """The calls are in the prompt (JSON); one per turn, then a closing text."""
    first = body["messages"][0]["content"]
    prompt = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
    calls = json.loads(prompt)
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turn < len(calls):
        name, input = calls[turn]
        return reply(tool_use(name, input, id=f"t{turn}"))
    return reply("done")


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as srv:
        srv.handler = scripted
        yield srv


def build(root: Path) -> dict[str, Path]:
    """proj/a/b/c/f.txt, the same tree under outside/, an empty ~/.ssh and proj/.agent-tui/."""
    places = {"proj": root / "proj", "outside": root / "outside", "home": root / "home"}
    for base in (places["proj"], places["outside"]):
        (base / "a" / "b" / "c").mkdir(parents=True)
        (base / "a" / "b" / "c" / "f.txt").write_text(TEXT)
    (places["home"] / ".ssh").mkdir(parents=True)
    (places["proj"] / ".agent-tui").mkdir()
    return places


def swap(places: dict[str, Path], depth: int, to: str, name: str) -> None:
    """Move component `depth` of proj/a/b/c/`name` away (or, for the file, make it) and put a symlink
    to `to` in its place."""
    rel = Path(*(*FOLDERS, name)[: depth + 1])
    here = places["proj"] / rel
    there = {
        "mirror": places["outside"] / rel,
        "ssh": places["home"] / ".ssh",
        "settings": places["proj"] / ".agent-tui",
    }[to]
    if here.exists():
        here.rename(here.with_name(here.name + ".orig"))
    here.symlink_to(there)


def files_under(folder: Path) -> dict[str, str]:
    """Every file below `folder` (not following symlinks) and its text."""
    found = {}
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(dirpath) / name
            found[str(path.relative_to(folder))] = "<link>" if path.is_symlink() else path.read_text()
    return found


def file_of(tool: str) -> str:
    return "new.txt" if tool == "WriteNew" else "f.txt"


def calls_for(tool: str, proj: Path) -> list[tuple[str, dict[str, Any]]]:
    target = proj / Path(*FOLDERS, file_of(tool))
    read = [("Read", {"file_path": str(target)})]
    if tool == "Write":
        return [*read, ("Write", {"file_path": str(target), "content": "ssh-ed25519 AAAA attacker\n"})]
    if tool == "WriteNew":
        return [("Write", {"file_path": str(target), "content": "ssh-ed25519 AAAA\n"})]
    change = {"old_string": "value = 1", "new_string": "value = 2"}
    return [*read, (tool, {"file_path": str(target), **(change if tool == "Edit" else {"edits": [change]})})]


async def scenario(url: str, places: dict[str, Path], tool: str, mode: str, depth: int, to: str,
                   when: str) -> list[dict[str, Any]]:
    calls = calls_for(tool, places["proj"])
    changing = f"t{len(calls) - 1}"
    session = make_session(url, places["proj"], policy=PermissionPolicy(mode=mode, allow=["Bash(make:*)"]))
    swapped: list[str] = []

    def on_event(e: ev.Event) -> None:
        if isinstance(e, EVENTS[when]) and getattr(e, "tool_use_id", None) == changing and not swapped:
            swapped.append(when)
            swap(places, depth, to, file_of(tool))
        if isinstance(e, ev.PermissionRequested) and e.future is not None:
            careful = e.danger is None and "outside the working directories" not in e.message
            answer = PermissionAnswer("allow" if careful else "deny")
            fut = e.future
            asyncio.get_running_loop().call_soon(lambda: fut.done() or fut.set_result(answer))

    session.bus.add_listener(on_event)
    try:
        await asyncio.wait_for(session.submit(json.dumps(calls)), 20)
    finally:
        await session.aclose()
    assert check_history(session.history) == []
    assert swapped, f"the swap at {when} never happened"
    return session.history


@pytest.mark.property
@settings(max_examples=examples(0.5))
@given(
    tool=st.sampled_from(["Write", "WriteNew", "Edit", "MultiEdit"]),
    mode=st.sampled_from(["default", "acceptEdits", "bypassPermissions"]),
    depth=st.integers(min_value=0, max_value=len(FOLDERS)),
    to=st.sampled_from(["mirror", "ssh", "settings"]),
    when=st.sampled_from(list(EVENTS)),
)
def test_no_symlink_swap_sends_a_write_outside_the_project(server, tmp_path, monkeypatch, tool, mode, depth, to,
                                                           when):
    # Only default mode asks about a write inside the project.
    assume(when != "asked" or mode == "default")
    # The file itself can only be swapped for a file: the mirror's copy.
    assume(depth < len(FOLDERS) or to == "mirror")
    # Swapped before the check, bypassPermissions writes outside on purpose (the policy saw where).
    assume(not (when == "queued" and mode == "bypassPermissions" and to == "mirror"))
    count("symlink swaps around a file tool's permission check")
    event(f"{tool} {when}")
    root = Path(os.path.realpath(tempfile.mkdtemp(dir=tmp_path)))
    places = build(root)
    monkeypatch.setenv("HOME", str(places["home"]))
    outside, settings_dir = files_under(places["outside"]), files_under(places["proj"] / ".agent-tui")
    history = asyncio.run(scenario(server.url, places, tool, mode, depth, to, when))
    assert files_under(places["outside"]) == outside
    assert files_under(places["home"]) == {}
    assert files_under(places["proj"] / ".agent-tui") == settings_dir
    changing = f"t{len(calls_for(tool, places['proj'])) - 1}"
    [result] = [b for m in history if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_result" and b["tool_use_id"] == changing]
    assert result.get("is_error"), result
    if when != "queued":
        # Swapped after the check: the call itself refuses (before it, the policy saw the swap and asked).
        assert CHANGED in result["content"], result
