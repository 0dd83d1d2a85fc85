"""Edit / MultiEdit / Write through the loop, on the real SDK against the loopback server:
every error text the model can receive, an edit by another process between Read and Edit
(the session's file watcher is on), and MultiEdit's all-or-nothing."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.file_state import lookup
from tests.engine_helpers import make_session, tool_results
from tests.loopback import reply, tool_use

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = ("File has been modified since read, either by the user or by a linter. "
            "Read it again before attempting to write it.")


def bypass():
    return PermissionPolicy(mode="bypassPermissions")


async def run_calls(api, tmp_path, *calls, watch=False):
    """One model turn per call (each answered in order), then a closing text; the tool_result of each."""
    api.push(*[reply(tool_use(name, input, id=f"t{i}")) for i, (name, input) in enumerate(calls)], reply("done"))
    session = make_session(api.url, tmp_path, policy=bypass(), watch_files=watch)
    try:
        await session.submit("change the files")
    finally:
        await session.aclose()
    assert check_history(session.history) == []
    return [tool_results(req.body)[0] for req in api.requests[1:]]


async def test_edit_of_a_file_never_read_is_refused(api, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    [result] = await run_calls(api, tmp_path, ("Edit", {"file_path": str(tmp_path / "a.py"), "old_string": "1",
                                                        "new_string": "2"}))
    assert result["is_error"] and result["content"] == NOT_READ
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


async def test_write_over_a_file_never_read_is_refused(api, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    [result] = await run_calls(api, tmp_path, ("Write", {"file_path": str(tmp_path / "a.py"), "content": "y"}))
    assert result["is_error"] and result["content"] == NOT_READ


async def test_edit_errors_are_specific(api, tmp_path):
    path = str(tmp_path / "a.py")
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    results = await run_calls(
        api, tmp_path,
        ("Read", {"file_path": path}),
        ("Edit", {"file_path": path, "old_string": "z = 9", "new_string": "z = 8"}),
        ("Edit", {"file_path": path, "old_string": "x = 1", "new_string": "x = 2"}),
        ("Edit", {"file_path": path, "old_string": "x = 1", "new_string": "x = 1"}),
        ("Edit", {"file_path": str(tmp_path / "missing.py"), "old_string": "a", "new_string": "b"}),
    )
    assert results[1]["content"].startswith("String to replace not found in file.")
    assert results[2]["content"].startswith(
        "Found 2 matches of the string to replace, but replace_all is false.")
    assert results[3]["content"] == "No changes to make: old_string and new_string are exactly the same."
    assert results[4]["content"].startswith("File does not exist.")
    assert all(r["is_error"] for r in results[1:])
    assert (tmp_path / "a.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_after_read_succeeds_and_replace_all_changes_every_match(api, tmp_path):
    path = str(tmp_path / "a.py")
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    results = await run_calls(api, tmp_path, ("Read", {"file_path": path}),
                              ("Edit", {"file_path": path, "old_string": "x = 1", "new_string": "x = 2",
                                        "replace_all": True}))
    assert not results[1].get("is_error")
    assert (tmp_path / "a.py").read_text() == "x = 2\nx = 2\n"


@pytest.mark.parametrize("keep_mtime", [False, True])
async def test_an_edit_by_another_process_between_read_and_edit_is_caught(api, tmp_path, keep_mtime):
    """Another process rewrites the file after the Read (keeping its mtime in the second case,
    which only the watcher sees); the Edit is refused and the file keeps the other change."""
    path = tmp_path / "a.py"
    path.write_text("value = 1\n")
    code = ("import os, sys; p = sys.argv[1]; st = os.stat(p); open(p, 'w').write('value = 99\\n');"
            + (" os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))" if keep_mtime else ""))

    def script(body, index):
        if index == 0:
            return reply(tool_use("Read", {"file_path": str(path)}, id="t_read"))
        if index == 1:
            subprocess.run([sys.executable, "-c", code, str(path)], check=True)
            if keep_mtime:  # only the watcher can see this change: wait until it has
                deadline = time.monotonic() + 60
                while not (lookup(session.tool_state, path) or {}).get("stale"):
                    assert time.monotonic() < deadline, "the watcher never saw the change"
                    time.sleep(0.01)
            return reply(tool_use("Edit", {"file_path": str(path), "old_string": "value = 1",
                                           "new_string": "value = 2"}, id="t_edit"))
        return reply("done")

    api.handler = script
    session = make_session(api.url, tmp_path, policy=bypass(), watch_files=True)
    try:
        await session.submit("edit it")
    finally:
        await session.aclose()
    result = tool_results(api.requests[2].body)[0]
    assert result["is_error"] and result["content"] == MODIFIED
    assert path.read_text() == "value = 99\n"


async def test_multiedit_applies_all_edits_or_none(api, tmp_path):
    path = str(tmp_path / "a.py")
    (tmp_path / "a.py").write_text("a = 1\nb = 2\n")
    results = await run_calls(
        api, tmp_path,
        ("Read", {"file_path": path}),
        ("MultiEdit", {"file_path": path, "edits": [{"old_string": "a = 1", "new_string": "a = 10"},
                                                    {"old_string": "nope", "new_string": "x"}]}),
        ("MultiEdit", {"file_path": path, "edits": [{"old_string": "a = 1", "new_string": "a = 10"},
                                                    {"old_string": "b = 2", "new_string": "b = 20"}]}),
    )
    assert results[1]["is_error"] and "Edit 2" in results[1]["content"]
    assert not results[2].get("is_error")
    assert (tmp_path / "a.py").read_text() == "a = 10\nb = 20\n"


async def test_write_keeps_crlf_line_endings_and_the_file_mode(api, tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"echo one\r\necho two\r\n")
    path.chmod(0o755)
    await run_calls(api, tmp_path, ("Read", {"file_path": str(path)}),
                    ("Write", {"file_path": str(path), "content": "echo three\necho four\n"}))
    assert path.read_bytes() == b"echo three\r\necho four\r\n"
    assert path.stat().st_mode & 0o777 == 0o755
    assert not [p for p in tmp_path.iterdir() if p.name not in ("run.sh",)]
