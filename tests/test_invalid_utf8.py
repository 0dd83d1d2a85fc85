"""A file that is not valid UTF-8 never poisons the session: tool results, requests,
the transcript and print mode's output are valid UTF-8 (undecodable bytes show as
U+FFFD), and an Edit keeps those bytes in the file as they were."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.edit import UNDECODABLE_MESSAGE
from tests.engine_helpers import make_session, tool_results
from tests.loopback import LoopbackServer, reply, tool_use
from tests.test_print_mode import AGENT, env_for

LATIN1 = b"name = 'caf\xe9'\nx = 1\n"


def latin1_file(cwd: Path) -> Path:
    path = cwd / "latin.py"
    path.write_bytes(LATIN1)
    return path


def read_then_edit(path: Path, old: str = "x = 1", new: str = "x = 2") -> list:
    return [
        reply(tool_use("Read", {"file_path": str(path)}, id="t_read")),
        reply(tool_use("Edit", {"file_path": str(path), "old_string": old, "new_string": new}, id="t_edit")),
        reply("Edited."),
    ]


async def test_editing_a_latin1_file_keeps_its_bytes_and_every_later_request_succeeds(api, tmp_path):
    path = latin1_file(tmp_path)
    api.push(*read_then_edit(path), reply("Still here."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)

    first = await session.submit("set x to 2")
    second = await session.submit("anything else?")
    await session.aclose()

    assert (first.reason, second.reason) == (TerminalReason.COMPLETED, TerminalReason.COMPLETED)
    assert len(api.requests) == 4 and second.result == "Still here."
    assert path.read_bytes() == b"name = 'caf\xe9'\nx = 2\n"
    [edit] = tool_results(api.requests[2].body)
    assert not edit.get("is_error") and "caf\ufffd'" in edit["content"] and "x = 2" in edit["content"]
    session.store.path.read_bytes().decode("utf-8")  # strict: the transcript is valid UTF-8


async def test_an_edit_that_would_match_undecodable_bytes_is_refused_clearly(api, tmp_path):
    path = latin1_file(tmp_path)
    api.push(*read_then_edit(path, old="caf\ufffd", new="cafe"))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))

    await session.submit("rename")

    [edit] = tool_results(api.requests[2].body)
    assert edit["is_error"] and edit["content"] == UNDECODABLE_MESSAGE
    assert path.read_bytes() == LATIN1


async def test_a_transcript_holding_undecodable_bytes_resumes_and_sends_valid_text(tmp_path):
    path = latin1_file(tmp_path)
    with LoopbackServer() as srv:
        srv.push(reply(tool_use("Read", {"file_path": str(path)}, id="t_read")), reply("Read it."), reply("Resumed."))
        first = make_session(srv.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
        await first.submit("read latin.py")
        await first.aclose()
        # Earlier versions stored such a result with surrogatepass: "\udce9" as the bytes ED B3 A9.
        transcript = first.store.path
        transcript.write_bytes(transcript.read_bytes().replace("\ufffd".encode(), "\udce9".encode("utf-8", "surrogatepass")))

        resumed = make_session(srv.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
        resumed.resume()
        terminal = await resumed.submit("and now?")
        await resumed.aclose()

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Resumed."
    [read] = tool_results_of(srv.requests[2].body["messages"][2])
    assert "caf\ufffd'" in read["content"]


def tool_results_of(message: dict) -> list:
    return [b for b in message["content"] if b.get("type") == "tool_result"]


def test_print_mode_stream_output_and_continue_print_valid_utf8(api, tmp_path):
    path = latin1_file(tmp_path)
    api.push(*read_then_edit(path), reply("Continued."))
    env = env_for(api.url)
    bypass = ["--permission-mode", "bypassPermissions"]

    first = subprocess.run([AGENT, "-p", "set x to 2", "--output-format", "stream-events", *bypass], cwd=tmp_path,
                           env=env, capture_output=True, timeout=120)
    second = subprocess.run([AGENT, "-p", "-c", "more?", "--output-format", "stream-json", "--verbose", *bypass],
                            cwd=tmp_path, env=env, capture_output=True, timeout=120)

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    lines = [json.loads(line) for line in first.stdout.decode("utf-8").splitlines()]  # strict decode
    edit = next(e for e in lines if e["type"] == "tool_finished" and e["name"] == "Edit")
    assert not edit["is_error"] and "caf\ufffd'" in edit["data"]["diff"]
    assert [json.loads(line) for line in second.stdout.decode("utf-8").splitlines()][-1]["result"] == "Continued."
    assert path.read_bytes() == b"name = 'caf\xe9'\nx = 2\n"


def test_a_transcript_line_with_a_lone_surrogate_loads_it_as_a_replacement_either_way_it_was_stored(tmp_path):
    from agent_tui.engine.store import load_transcript

    message = {"role": "user", "content": [{"type": "text", "text": "caf\udce9 and \U0001F600 and é"}]}
    lines = [json.dumps({"type": "session", "session_id": "s", "cwd": str(tmp_path)}).encode()]
    # As a JSON escape, and as the bytes surrogatepass wrote; a line without either is taken as it is.
    lines.append(json.dumps({"type": "message", "message": message}).encode())
    lines.append(json.dumps({"type": "message", "message": message}, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    lines.append(json.dumps({"type": "message", "message": {"role": "assistant", "content": "plain é"}},
                            ensure_ascii=False).encode())
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    loaded = load_transcript(path)
    texts = [m["content"][0]["text"] if isinstance(m["content"], list) else m["content"] for m in loaded.messages]
    assert texts == ["caf\ufffd and \U0001F600 and é", "caf\ufffd and \U0001F600 and é", "plain é"]
    for text in texts:
        text.encode("utf-8")  # no lone surrogate left


@pytest.mark.parametrize("stored", [
    b'"caf\\udce9"',  # a JSON escape
    b'"caf\\uDCE9"',  # the same, in capitals
    '"caf\udce9"'.encode("utf-8", "surrogatepass"),  # the bytes surrogatepass wrote
])
def test_a_transcript_whose_only_odd_line_holds_one_lone_surrogate_loads_it_as_a_replacement(tmp_path, stored):
    """The whole file is looked at for a surrogate's first bytes before its lines are parsed in one go:
    each form alone is found.  Text whose UTF-8 shares a first byte with them (Hangul) is kept as it is."""
    from agent_tui.engine.store import load_transcript

    lines = [json.dumps({"type": "session", "session_id": "s", "cwd": str(tmp_path)}).encode(),
             json.dumps({"type": "message", "message": {"role": "user", "content": "한국어"}},
                        ensure_ascii=False).encode(),
             b'{"type":"message","message":{"role":"assistant","content":' + stored + b"}}"]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert [m["content"] for m in load_transcript(path).messages] == ["한국어", "caf\ufffd"]
