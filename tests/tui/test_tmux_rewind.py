"""The installed `agent-tui` in tmux: three prompts edit two files with Edit and one with Bash;
Esc Esc rewinds to the second prompt, and the files and the conversation are as they were then."""

from __future__ import annotations

import time

from tests.loopback import reply, text, tool_use

from .test_tmux import agent, pytestmark  # noqa: F401  (the fixture, and the tmux skip with its reason)


def _edit(project, name: str, old: str, new: str, n: int, said: str) -> list:
    path = str(project / name)
    return [reply(tool_use("Read", {"file_path": path}, id=f"toolu_read{n}")),
            reply(tool_use("Edit", {"file_path": path, "old_string": old, "new_string": new}, id=f"toolu_edit{n}")),
            reply(text(said))]


def _approve(tmux, done: str) -> None:
    tmux.wait_armed()
    tmux.press("y")
    tmux.wait_for(lambda shown: done in shown and "● ready" in shown)


def test_rewinding_to_the_second_prompt_restores_files_and_conversation(agent):  # noqa: F811 (the fixture)
    tmux, srv, project = agent.tmux, agent.api, agent.project
    (project / "a.py").write_text("A = 1\n")
    (project / "b.py").write_text("B = 1\n")
    (project / "c.txt").write_text("c one\n")
    srv.push(*_edit(project, "a.py", "A = 1", "A = 2", 1, "Edited a.py."),
             *_edit(project, "b.py", "B = 1", "B = 2", 2, "Edited b.py."),
             reply(tool_use("Bash", {"command": "echo 'c two' > c.txt"}, id="toolu_bash")),
             reply(text("Rewrote c.txt.")),
             reply(text("Changing b again.")))

    tmux.prompt("change a")
    _approve(tmux, "Edited a.py.")
    tmux.prompt("change b")
    _approve(tmux, "Edited b.py.")
    tmux.prompt("change c")
    _approve(tmux, "Rewrote c.txt.")
    assert [(project / n).read_text() for n in ("a.py", "b.py", "c.txt")] == ["A = 2\n", "B = 2\n", "c two\n"]

    # Esc Esc with nothing running lists the prompts, newest first; the second one, then both.
    tmux.press("Escape")
    time.sleep(0.3)
    tmux.press("Escape")
    tmux.wait_for(lambda shown: "Rewind to just before which prompt?" in shown and "1. change a" in shown)
    tmux.press("Down")
    time.sleep(0.2)
    tmux.press("Enter")
    tmux.wait_for("Rewind to before prompt 2: what goes back?")
    tmux.press("Enter")  # the first choice: code and conversation
    shown = tmux.wait_for("Rewound to before prompt 2")

    assert [(project / n).read_text() for n in ("a.py", "b.py", "c.txt")] == ["A = 2\n", "B = 1\n", "c one\n"]
    assert "Edited a.py." in shown and "Edited b.py." not in shown and "Rewrote c.txt." not in shown
    # The second prompt is back in the input; sent again, the model sees the conversation as it was.
    tmux.press("Enter")
    tmux.wait_for("Changing b again.")
    messages = srv.requests[-1].body["messages"]
    sent = str(messages)
    assert "change a" in sent and "Edited a.py." in sent
    assert "Edited b.py." not in sent and "change c" not in sent and "Rewrote c.txt." not in sent
    assert messages[-1]["content"][-1]["text"] == "change b"
