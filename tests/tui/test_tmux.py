"""The installed `agent-tui` in a real terminal (tmux), driven as a person would.

Keys go in with `tmux send-keys`, assertions read `tmux capture-pane`; the
loopback Messages-API server runs in this process and answers the app.
Nothing inside the app is touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer, hang, reply, text, tool_use

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

AGENT = shutil.which("agent-tui") or str(Path(sys.executable).parent / "agent-tui")
SESSION = "agent"
FIRST_PAINT = 15.0  # the SDK import is slow on a loaded machine
STEP = 8.0

WELCOME = "type a request and press Enter"
CAPITAL = "Paneville is the capital of Tmuxland."
WROTE = "The greeting file is written."
STORY_START = "Once upon a time a stream"
STORY = STORY_START + " began, and it went on and on without ever reaching its end, because the server stalled."
STILL_HERE = "Still here after the interruption."
EXITED = "agent-tui exited with status"
ARMING = "arming…"


class Tmux:
    """One private tmux server (its own socket and an empty config) running one pane."""

    def __init__(self, workdir: Path) -> None:
        self.socket = f"agent-tui-test-{os.getpid()}-{secrets.token_hex(4)}"
        self.socket_path = ""
        self.conf = workdir / "tmux.conf"
        # The pane and what it shows stay after its process exits.
        self.conf.write_text("set -g remain-on-exit on\nset -g status off\n")

    def run(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", str(self.conf), *args],
                             capture_output=True, text=True, timeout=10, env=env)
        if check and out.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def start(self, command: list[str], cwd: Path, env: dict[str, str], size: tuple[int, int] = (120, 40)) -> None:
        # The server is started by this call, so `env` becomes its whole global
        # environment; -e repeats what matters for the pane.
        pinned = [arg for var in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "AGENT_TUI_DATA_DIR",
                                  "AGENT_TUI_CONFIG_DIR") for arg in ("-e", f"{var}={env[var]}")]
        self.run("new-session", "-d", "-s", SESSION, "-x", str(size[0]), "-y", str(size[1]), "-c", str(cwd),
                 *pinned, *command, env=env)

    def resize(self, width: int, height: int) -> None:
        """Resize the window, as dragging a terminal's corner does (the app gets SIGWINCH)."""
        self.run("resize-window", "-t", SESSION, "-x", str(width), "-y", str(height))
        self.socket_path = self.run("display-message", "-p", "#{socket_path}").strip()

    def screen(self, history: bool = False) -> str:
        """The visible pane; with `history`, the lines scrolled off its top first."""
        start = ["-S", "-"] if history else []
        return self.run("capture-pane", "-p", *start, "-t", SESSION, check=False)

    def type(self, literal: str) -> None:
        self.run("send-keys", "-t", SESSION, "-l", literal)

    def press(self, *keys: str) -> None:
        self.run("send-keys", "-t", SESSION, *keys)

    def pane(self, fmt: str) -> str:
        """A tmux format expanded for the pane ("" once the server is gone)."""
        return self.run("display-message", "-p", "-t", SESSION, fmt, check=False).strip()

    def kill(self) -> None:
        path = self.socket_path or self.pane("#{socket_path}")
        self.run("kill-server", check=False)
        if path:  # tmux leaves the socket file behind
            Path(path).unlink(missing_ok=True)

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = STEP, history: bool = False,
                 every: float = 0.05) -> str:
        """Poll the pane every `every` seconds until `what` is on it; the screen, or an error
        showing it."""
        check = (lambda s: what in s) if isinstance(what, str) else what
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen(history)
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what!r}; the pane shows:\n{shown}")
            time.sleep(every)

    def prompt(self, words: str) -> None:
        """Type a prompt and send it with Enter, as a person would."""
        self.type(words)
        self.wait_for(words)
        self.press("Enter")

    def wait_armed(self, timeout: float = STEP) -> str:
        """Wait until a permission prompt shows and takes answers (it arms after a pause in typing)."""
        return self.wait_for(lambda s: "Permission needed" in s and ARMING not in s and "y yes" in s, timeout)


def clean_env(url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENT_TUI_", "TMUX"))}
    env.update({
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "test-key",
        "AGENT_TUI_DATA_DIR": str(tmp_path / "user-data"),
        "AGENT_TUI_CONFIG_DIR": str(tmp_path / "user-config"),
        "TERM": "xterm-256color",
    })
    return env


def prompt_sent(request_body: dict) -> list[str]:
    """The text blocks of the last user message of a request."""
    content = request_body["messages"][-1]["content"]
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content if block.get("type") == "text"]


@dataclass
class Agent:
    tmux: Tmux
    api: LoopbackServer
    project: Path


@contextlib.contextmanager
def _launch(tmp_path: Path, size: tuple[int, int]) -> Iterator[Agent]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)  # a test may lay out the project before agent-tui starts
    with LoopbackServer() as api:
        tmux = Tmux(tmp_path)
        try:
            # The shell reports agent-tui's exit status on the pane once the app has
            # left the alternate screen (tmux's own #{pane_dead_status} is unreliable:
            # tmux 3.3a can miss the SIGCHLD and leave the pane's child a zombie).
            launch = f'{shlex.quote(AGENT)}; echo "{EXITED} $?"'
            tmux.start(["sh", "-c", launch], project, clean_env(api.url, tmp_path), size)
            tmux.wait_for(WELCOME, FIRST_PAINT)
            yield Agent(tmux, api, project)
        finally:
            tmux.kill()
        assert api.errors == []


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    """`agent-tui` started in a tmux pane, in an empty project folder, talking to a
    loopback server (script it with `agent.api.push`); on its first paint."""
    with _launch(tmp_path, (120, 40)) as launched:
        yield launched


@pytest.fixture
def small_agent(tmp_path: Path) -> Iterator[Agent]:
    """The same in an 80x24 terminal."""
    with _launch(tmp_path, (80, 24)) as launched:
        yield launched


def test_a_person_chats_approves_a_write_aborts_a_stream_and_quits(agent):
    tmux, srv = agent.tmux, agent.api
    target = agent.project / "greeting.txt"
    srv.push(
        reply(text(CAPITAL)),
        reply(tool_use("Write", {"file_path": str(target), "content": "hello from tmux\n"}, id="toolu_write")),
        reply(text(WROTE)),
        hang(after=8, of=reply(text(STORY), chunk=6)),
        reply(text(STILL_HERE)),
    )

    # 1. A question, and its answer.
    tmux.prompt("what is the capital of Tmuxland?")
    shown = tmux.wait_for(CAPITAL)
    assert "› what is the capital of Tmuxland?" in shown
    assert prompt_sent(srv.requests[0].body) == ["what is the capital of Tmuxland?"]

    # 2. A Write needs permission; `y` lets it run.
    tmux.prompt("write a greeting file")
    shown = tmux.wait_armed()
    assert "Write" in shown and "greeting.txt" in shown and "+hello from tmux" in shown
    assert not target.exists()
    tmux.press("y")
    shown = tmux.wait_for(WROTE)
    assert "Permission needed" not in shown
    assert target.read_text() == "hello from tmux\n"
    result = srv.requests[2].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_write"
    assert not result.get("is_error")

    # 3. Esc stops a stream that would never end.
    tmux.prompt("tell me a long story")
    tmux.wait_for(STORY_START)
    assert not srv.disconnects
    pressed = time.monotonic()
    tmux.press("Escape")
    assert srv.wait_disconnect(1, 30.0), f"the server saw no disconnect; the pane shows:\n{tmux.screen()}"
    assert srv.disconnects[0] - pressed < 1.0  # about 0.1 s: the terminal's Esc delay, then the abort
    tmux.wait_for("Interrupted")

    # 4. The next prompt gets a normal answer.
    tmux.prompt("are you still there?")
    tmux.wait_for(STILL_HERE)
    assert "are you still there?" in prompt_sent(srv.requests[4].body)

    # 5. Ctrl+Q quits: agent-tui exits with status 0 and the pane's process ends.
    assert tmux.pane("#{pane_dead}") == "0"
    tmux.press("C-q")
    # With history: when tmux reaps the child it scrolls the pane to print
    # "Pane is dead" at the bottom, which can push this line off the top.
    tmux.wait_for(lambda shown: f"{EXITED} 0" in shown.splitlines(), history=True)
    deadline = time.monotonic() + STEP
    while tmux.pane("#{pane_dead}") != "1":
        assert time.monotonic() < deadline, f"the pane did not close; it shows:\n{tmux.screen()}"
        time.sleep(0.05)
    assert len(srv.requests) == 5 and srv.pending == 0


def test_enter_right_after_the_text_sends_all_of_it(agent):
    """Text and Enter arriving together, as `send-keys TEXT Enter` or fast typing into a busy app gives."""
    words = "please read the configuration file and summarise every section of it"
    agent.api.push(reply(text("Got the whole line.")))

    agent.tmux.press(words, "Enter")

    sent = agent.api.wait_requests(1, 3.0)
    shown = agent.tmux.screen()
    assert sent, f"Enter sent nothing; the pane shows:\n{shown}"
    assert prompt_sent(agent.api.requests[0].body) == [words], shown
    agent.tmux.wait_for("Got the whole line.")


SAGA_END = "And that is the whole saga."
SAGA = " ".join(f"Chapter {n} of the saga goes on for a while." for n in range(1, 41)) + " " + SAGA_END


def test_at_80x24_a_person_approves_a_write_and_resizes_while_the_answer_streams(small_agent):
    tmux, srv = small_agent.tmux, small_agent.api
    target = small_agent.project / "greeting.txt"
    srv.push(
        reply(tool_use("Write", {"file_path": str(target), "content": "hello at 80x24\n"}, id="toolu_write")),
        reply(text(SAGA), chunk=12, delay=0.03),
    )

    tmux.prompt("write a greeting file")
    shown = tmux.wait_armed()
    # The prompt fits an 80x24 terminal: the diff and the answer keys are both on screen.
    assert "+hello at 80x24" in shown and "y yes" in shown and "n no" in shown
    tmux.press("y")
    tmux.wait_for("Chapter 1 of the saga")
    assert target.read_text() == "hello at 80x24\n"

    # Narrower, then wider, while the answer is still arriving.
    assert SAGA_END not in tmux.screen()
    tmux.resize(60, 20)
    shown = tmux.wait_for(lambda s: len(s.splitlines()[0]) <= 60 and "timeline" in s)
    tmux.resize(160, 48)
    shown = tmux.wait_for(lambda s: SAGA_END in s and "● ready" in s, timeout=30)
    # Wide again: the timeline pane is back beside the transcript.
    assert "model · turn 2" in shown and "Write" in shown

    tmux.press("C-q")
    shown = tmux.wait_for(lambda s: f"{EXITED} 0" in s, history=True)
    # As Claude Code does, the way back into the conversation is left in the terminal.
    session_id = re.search(r"agent-tui -r ([0-9a-f-]{36})", shown)
    assert session_id is not None, shown
    assert "Resume this session with:" in shown
    sessions = list((small_agent.project.parent / "user-data").rglob(f"{session_id.group(1)}.jsonl"))
    assert len(sessions) == 1


LOOKED = "Nothing to glob here yet."


def _strip_shown(shown: str) -> bool:
    return any("timeline" in line and "ctrl+t" in line for line in shown.splitlines())


def test_ctrl_t_hides_and_shows_the_strip_at_80_columns_and_the_pane_at_160(small_agent):
    tmux, srv = small_agent.tmux, small_agent.api
    srv.push(reply(tool_use("Glob", {"pattern": "*.py"}, id="toolu_glob")), reply(text(LOOKED)))
    tmux.prompt("look for python files")
    shown = tmux.wait_for(lambda s: LOOKED in s and _strip_shown(s) and "● ready" in s)
    # 80 columns leave no room for a pane beside 100 columns of transcript: the strip.
    assert "model · turn" not in shown

    tmux.press("C-t")
    shown = tmux.wait_for(lambda s: not _strip_shown(s))
    assert "model · turn" not in shown and LOOKED in shown  # hidden, and no pane instead
    tmux.press("C-t")
    tmux.wait_for(_strip_shown)

    tmux.resize(160, 48)
    shown = tmux.wait_for(lambda s: "model · turn 2" in s)
    assert "model · turn 1" in shown and not _strip_shown(shown)
    tmux.press("C-t")
    shown = tmux.wait_for(lambda s: "model · turn" not in s)
    assert not _strip_shown(shown) and LOOKED in shown
    tmux.press("C-t")
    tmux.wait_for(lambda s: "model · turn 2" in s)

    tmux.press("C-q")
    tmux.wait_for(lambda s: f"{EXITED} 0" in s, history=True)


def test_a_command_typed_in_one_burst_runs_as_typed_fifty_times(agent):
    """`/compact` + Enter (and `/export FILE` + Enter) arriving in one write, as from a
    paste or a fast typist on a busy machine: each runs exactly the command typed."""
    tmux, srv = agent.tmux, agent.api
    srv.push(reply(text("Hello there.")))
    tmux.prompt("say hello")
    tmux.wait_for("Hello there.")

    def answer(body: dict, index: int):
        return reply(text(f"<summary>Summary number {index}.</summary>"))

    srv.handler = answer
    summaries = exports = 0
    for n in range(50):
        before = len(srv.requests)
        if n % 3 == 2:
            name = f"burst-{n}.md"
            tmux.press(f"/export {name}", "Enter")
            deadline = time.monotonic() + STEP
            while not (agent.project / name).exists():
                assert time.monotonic() < deadline, f"burst {n}: /export did not run; the pane shows:\n{tmux.screen()}"
                time.sleep(0.05)
            exports += 1
            assert len(srv.requests) == before, f"burst {n}: /export made a model request"
        else:
            tmux.press("/compact", "Enter")
            assert srv.wait_requests(before + 1, STEP), f"burst {n}: /compact did not run:\n{tmux.screen()}"
            last = " ".join(prompt_sent(srv.requests[-1].body))
            assert "summary" in last.lower(), f"burst {n}: the request was not a summary request"
            summaries += 1
            tmux.wait_for(lambda s: "Compacting conversation…" not in s and "● ready" in s)
        # The input is empty again (its placeholder shows once repainted): nothing of the burst was
        # left behind or completed into something else.
        tmux.wait_for("Ask anything")
    assert (summaries, exports) == (34, 16)
    print(f"\n50 bursts: {summaries} /compact, {exports} /export, each ran as typed")


TYPED = "yes and always answer anything else now, exactly as any person typing an easy sentence"
RAN = "The command ran."


def test_a_sentence_typed_while_a_prompt_arrives_answers_nothing_and_y_after_arming_runs(agent):
    """The model picks the moment: a prompt appearing mid-sentence must not take the next
    letter (`y` would approve, `a` would also save a rule). The letters stay in the input."""
    tmux, srv = agent.tmux, agent.api
    marker = agent.project / "ran.txt"
    srv.push(
        reply(tool_use("Bash", {"command": f"touch {marker.name}"}, id="toolu_touch")),
        reply(text(RAN)),
    )
    tmux.prompt("make the file")
    # Typing goes on, one key at a time, before, while and well after the prompt appears.
    seen_at = None
    for n, letter in enumerate(TYPED):
        tmux.type(letter)
        time.sleep(0.04)
        if seen_at is None and n % 3 == 0 and "Permission needed" in tmux.screen():
            seen_at = time.monotonic()
    assert seen_at is not None, f"no prompt arrived while typing; the pane shows:\n{tmux.screen()}"
    typed_after = time.monotonic() - seen_at
    assert typed_after > 1.0, f"only {typed_after:.2f}s of typing after the prompt appeared"
    shown = tmux.screen()
    assert "Permission needed" in shown, shown
    assert not marker.exists(), "a letter typed into the input approved the command"
    assert not (agent.project / ".agent-tui" / "settings.local.json").exists(), "a letter saved a rule"
    assert len(srv.requests) == 1
    # Every letter landed in the input box (it wraps: compare without spaces and line breaks).
    box = "".join(shown.split("Permission needed", 1)[1].split())
    assert "".join(TYPED.split())[-40:] in box.replace("│", ""), shown

    # A pause: the prompt arms and `y` runs the command.
    shown = tmux.wait_armed()
    tmux.press("y")
    tmux.wait_for(RAN)
    assert marker.exists()
    assert not (agent.project / ".agent-tui" / "settings.local.json").exists()
    result = srv.requests[1].body["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_touch" and not result.get("is_error")
