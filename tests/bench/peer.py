"""Running agent-tui and Claude Code side by side against the same loopback server.

Claude Code is found through `CLAUDE_CODE_BIN` or a `claude` on PATH (for
example `npm install --prefix DIR @anthropic-ai/claude-code`, then
`CLAUDE_CODE_BIN=DIR/node_modules/.bin/claude`).  It honours
`ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`; it runs with a scratch
`CLAUDE_CONFIG_DIR` and `HOME` whose `.claude.json` says onboarding is done,
the working folder is trusted and the key is approved, so it starts straight
into its prompt, and with its updater and non-essential traffic off, so the only
requests it makes are the scripted ones.

`PtyApp` runs either program full-screen in a pseudo-terminal (120x40) and
timestamps what it writes, which is how the TUI benchmark sees first paint and
the last line of an answer for both programs in the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

SCRATCH = Path(tempfile.gettempdir()) / "agent-tui-bench"
COLUMNS, LINES = 120, 40


def find_agent() -> str:
    beside = Path(sys.executable).parent / "agent-tui"
    if beside.exists():
        return str(beside)
    found = shutil.which("agent-tui")
    if found:
        return found
    raise SystemExit("agent-tui is not installed (neither beside the interpreter nor on PATH)")


def interpreter_of(exe: str) -> str:
    """The Python an installed script runs on (its #! line), else this one."""
    first = Path(exe).read_text(errors="replace").partition("\n")[0]
    return first.removeprefix("#!").strip() if first.startswith("#!") and "python" in first else sys.executable


def compile_agent(exe: str) -> str:
    """Write the bytecode of agent-tui's modules, as `pip install .` does at install time;
    what was installed, in words (an editable install starts slower than a user's).

    An editable install writes none, and where PYTHONDONTWRITEBYTECODE is set
    every start would compile them from source: that is not what a user runs."""
    interpreter = interpreter_of(exe)
    where = subprocess.run(
        [interpreter, "-c", "import agent_tui, compileall, os; "
         "compileall.compile_dir(os.path.dirname(agent_tui.__file__), quiet=1); "
         "import agent_tui.themes as t; compileall.compile_dir(os.path.dirname(t.__file__), quiet=1); "
         "print(os.path.dirname(agent_tui.__file__))"],
        check=True,
        capture_output=True,
        text=True,
        # Not from the repository root, where `agent_tui` would be the source tree, not the installed package.
        cwd=tempfile.gettempdir(),
    ).stdout.strip()
    if "site-packages" in Path(where).parts:
        return f"installed in {where}"
    return f"an editable install ({where}): start-up is slower than after `pip install .`, which users run"


def find_claude() -> str | None:
    """The Claude Code executable, or None (the benchmarks then run agent-tui alone)."""
    named = os.environ.get("CLAUDE_CODE_BIN")
    if named:
        if not os.access(named, os.X_OK):
            raise SystemExit(f"CLAUDE_CODE_BIN={named} is not an executable")
        return named
    return shutil.which("claude")


def claude_version(exe: str) -> str:
    import subprocess

    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or out.stderr.strip()


def _base_env() -> dict[str, str]:
    # Nothing of the caller's Anthropic or Claude set-up leaks into either program.
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}


def agent_env(url: str) -> dict[str, str]:
    env = _base_env()
    env["ANTHROPIC_BASE_URL"] = url
    env["ANTHROPIC_API_KEY"] = "test"
    # Transcripts and settings of benchmark runs stay out of the user's folders.
    env["AGENT_TUI_DATA_DIR"] = str(SCRATCH / "data")
    env["AGENT_TUI_CONFIG_DIR"] = str(SCRATCH / "config")
    env["AGENT_TUI_CACHE_DIR"] = str(SCRATCH / "cache")
    return env


def claude_env(url: str, work: Path) -> dict[str, str]:
    """Environment for Claude Code: scratch config that skips onboarding for `work`."""
    home = SCRATCH / "claude-home"
    config = SCRATCH / "claude-config"
    home.mkdir(parents=True, exist_ok=True)
    config.mkdir(parents=True, exist_ok=True)
    state_file = config / ".claude.json"
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        state = {}
    projects = state.setdefault("projects", {})
    projects[str(work.resolve())] = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    state.update(
        hasCompletedOnboarding=True,
        lastOnboardingVersion="9.9.9",
        # Claude Code approves a key by its last 20 characters.
        customApiKeyResponses={"approved": ["test"], "rejected": []},
    )
    state_file.write_text(json.dumps(state))
    env = _base_env()
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(config),
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="test",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


# ---------------------------------------------------------------- full screen in a pty

_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_78=>]")


def plain(data: bytes) -> str:
    """The text `data` writes, escape sequences left out."""
    return _ESCAPES.sub(b"", data).decode("utf-8", "replace")


def visible(data: bytes) -> int:
    """How many printable, non-blank characters `data` draws (escape sequences left out)."""
    text = plain(data)
    return sum(1 for ch in text if ch.isprintable() and not ch.isspace())


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (all its threads)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live_cpu(pid: int) -> float:
    """CPU seconds a live process's threads have run, to the nanosecond (the sum of
    /proc/PID/task/*/schedstat; /proc/PID/stat counts in 10 ms ticks).  Threads that
    have ended are not counted.  NaN once the process is gone."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return float("nan")
    return total / 1e9


def _threads_ns(pid: int) -> dict[str, int]:
    """Each live thread's CPU in nanoseconds (/proc/PID/task/*/schedstat), by thread id."""
    found = {}
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as f:
                    found[task] = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return found


def _proc_status(pid: int, key: str) -> float:
    """A memory figure of /proc/PID/status in MB (VmRSS now, VmHWM peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


class PtyApp:
    """A program running full-screen in a pseudo-terminal; what it writes, timestamped."""

    # Visible characters that make a frame (a window title or a cursor alone does not).
    FIRST_PAINT_CHARS = 40

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        env = dict(env, TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(LINES))
        self.started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # the child
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self.output = bytearray()
        self.drawn = 0  # visible characters so far
        self.status: int | None = None
        self.read_at = self.started  # when the last output came
        self.read_log: list[tuple[int, float]] = []  # (the output's length, the time) at each read
        # (wall, CPU of the program) at each read, while `track()` is on.
        self.reads: list[tuple[float, float]] | None = None
        self._terminal = None  # a pyte screen, fed by `rows()`
        self._fed = 0

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 1 << 16)
        except OSError:  # the child is gone
            data = b""
        if not data:
            raise SystemExit(f"bench: the program exited early; it wrote:\n{self._tail()}")
        self.output += data
        self.read_at = time.monotonic()
        self.read_log.append((len(self.output), self.read_at))
        self.drawn += visible(data)
        if self.reads is not None:
            self.reads.append((time.monotonic(), self.cpu()))
        return True

    def track(self) -> None:
        """From now on, note the time and the program's CPU at each output."""
        self.reads = [(time.monotonic(), self.cpu())]

    def longest_pauses(self) -> tuple[float, float]:
        """The longest stretch without output since `track()`: in seconds, and in the program's CPU seconds.

        The CPU figure is what the program computed between two screen updates: unlike
        wall time, other load on the machine does not stretch it (clock-tick resolution)."""
        reads = self.reads or []
        pairs = list(zip(reads, reads[1:], strict=False))
        if not pairs:
            return 0.0, 0.0
        return max(b[0] - a[0] for a, b in pairs), max(b[1] - a[1] for a, b in pairs)

    def frame_stats(self, burst: float = 0.004) -> tuple[float, float]:
        """Since `track()`: screen updates per second, and the 95th percentile of the program's
        CPU seconds between two of them.  Reads closer than `burst` apart are one update (a
        frame larger than the pty's buffer arrives in several reads)."""
        reads = self.reads or []
        frames = [r for n, r in enumerate(reads) if n == 0 or r[0] - reads[n - 1][0] >= burst]
        if len(frames) < 2:
            return 0.0, 0.0
        gaps = sorted(b[1] - a[1] for a, b in zip(frames, frames[1:], strict=False))
        return (len(frames) - 1) / (frames[-1][0] - frames[0][0]), gaps[min(len(gaps) - 1, int(len(gaps) * 0.95))]

    def _tail(self) -> str:
        return plain(bytes(self.output[-3000:]))

    def wait_for(self, found, what: str, timeout: float = 120.0) -> float:
        """Read until `found()` holds; the time (monotonic) of the read that made it hold."""
        deadline = time.monotonic() + timeout
        at = time.monotonic()
        while not found():
            if time.monotonic() > deadline:
                screen = "\n".join(self.rows()) if self._terminal else self._tail()
                raise SystemExit(f"bench: timed out waiting for {what}; the screen ends with:\n{screen}")
            if self._read(0.5):
                at = self.read_at
        return at

    def rows(self) -> list[str]:
        """The terminal's rows as the output so far leaves them: a terminal emulator's reading, for
        programs that rewrite only the cells that changed (the `bench` extra installs pyte)."""
        self._feed(len(self.output))
        return self._terminal.display

    def shown_at(self, found: Callable[[list[str]], bool]) -> float | None:
        """The time of the first read, of those not yet looked at, after which the terminal's rows
        satisfy `found`; None if none does.  The emulator is slow (milliseconds a frame), so it runs
        afterwards, over the reads as they were timed, and not while the program's output is timed."""
        for end, at in self.read_log:
            if end > self._fed:
                self._feed(end)
                if found(self._terminal.display):
                    return at
        return None

    def _feed(self, end: int) -> None:
        if self._terminal is None:
            try:
                import pyte
            except ImportError:
                raise SystemExit("bench: this part reads the screen with pyte: pip install -e '.[bench]'") from None
            self._terminal = pyte.Screen(COLUMNS, LINES)
            self._stream = pyte.ByteStream(self._terminal)
        self._stream.feed(bytes(self.output[self._fed:end]))
        self._fed = end

    def first_paint(self) -> tuple[float, float]:
        """Seconds from spawn to the first frame (the first output that draws text), and the
        program's CPU seconds by then (which other load on the machine does not stretch)."""
        at = self.wait_for(lambda: self.drawn >= self.FIRST_PAINT_CHARS, "the first frame")
        return at - self.started, self.cpu()

    def wait_text(self, marker: bytes, since: int, timeout: float = 300.0) -> float:
        """Read until `marker` appears in what was written after offset `since`."""
        return self.wait_for(lambda: self.output.find(marker, max(since - len(marker), 0)) >= 0,
                             repr(marker), timeout)

    def settle(self, quiet: float = 0.3, limit: float = 10.0) -> None:
        """Read until nothing has been written for `quiet` seconds."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and self._read(quiet):
            pass

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def submit(self, prompt: str) -> None:
        """Type the prompt, then Enter on its own (a burst would read as a paste)."""
        self.type(prompt)
        self.settle(0.2, 3.0)
        self.type("\r")

    def cpu(self) -> float:
        return _proc_cpu(self.pid)

    def cpu_mark(self) -> tuple[float, dict[str, int]]:
        """A point to measure CPU from (`cpu_since`)."""
        return _proc_cpu(self.pid), _threads_ns(self.pid)

    def cpu_since(self, mark: tuple[float, dict[str, int]]) -> float:
        """CPU seconds since `mark`: to the nanosecond from each thread's scheduler counter, unless a
        thread of the mark has ended or the 10 ms ticks of /proc/PID/stat (which count ended threads
        too) say two ticks more (a thread started and ended in between); then the ticks."""
        ticks, before = mark
        now = _threads_ns(self.pid)
        coarse = _proc_cpu(self.pid) - ticks
        if not before.keys() <= now.keys():
            return coarse
        fine = sum(ns - before.get(task, 0) for task, ns in now.items()) / 1e9
        return coarse if coarse - fine > 0.02 else fine

    def rss_mb(self) -> float:
        return _proc_status(self.pid, "VmRSS")

    def peak_rss_mb(self) -> float:
        return _proc_status(self.pid, "VmHWM")

    def close(self) -> None:
        if self.status is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(self.pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                    if pid:
                        self.status = status
                        break
                    with_output = select.select([self.fd], [], [], 0.05)[0]
                    if with_output:
                        try:
                            os.read(self.fd, 1 << 16)
                        except OSError:
                            pass
                if self.status is not None:
                    break
        os.close(self.fd)

    def __enter__(self) -> PtyApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
