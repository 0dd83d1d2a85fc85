"""Bash: run a shell command in its own process group, streaming its output.

The command runs in a new session so that a timeout, an abort or a cancelled
task can kill everything it started (pipelines, `&` children), not just the
shell.  Where bubblewrap works it runs inside the sandbox (tools/sandbox.py);
`dangerouslyDisableSandbox` and `sandbox.excludedCommands` run it outside,
after the usual permission prompt.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui.shell.classify import is_read_only_command
from agent_tui.tools import sandbox
from agent_tui.tools.base import BaseTool, Progress, ToolContext, ToolResult, one_line
from agent_tui.tools.sandbox import SandboxConfig

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_RESULT_CHARS = 30_000
MAX_UI_CHARS = 200_000
# At most this many Progress events per second, however fast the command prints.
PROGRESS_INTERVAL = 0.1
MAX_PROGRESS_CHARS = 4_000
# SIGTERM first so programs can clean up, then SIGKILL whatever is left.
KILL_GRACE = 1.0
# After the shell exits, how long to keep reading output a detached child may still be writing.
DRAIN_SECONDS = 0.2
NO_OUTPUT = "(Command completed with no output)"

DESCRIPTION = f"""\
Executes a given bash command with an optional timeout, in the current working directory.

Before executing the command:
- If the command will create new directories or files, first use `ls` to verify the parent \
directory exists and is the correct location.
- Always quote file paths that contain spaces with double quotes (e.g. cd "path with spaces/file.txt").

Usage notes:
- The command argument is required.
- You can specify an optional timeout in milliseconds (up to {MAX_TIMEOUT_MS}ms / \
{MAX_TIMEOUT_MS // 60000} minutes). If not specified, commands will time out after \
{DEFAULT_TIMEOUT_MS}ms ({DEFAULT_TIMEOUT_MS // 60000} minutes).
- Write a clear, concise description of what the command does in 5-10 words.
- If the output exceeds {MAX_RESULT_CHARS} characters, the middle is truncated.
- Set run_in_background to true for long-running processes such as dev servers; you get an ID \
and the path of a file that collects the output, which you can read later. Do not use `&` \
for this.
- Avoid `find`, `grep`, `cat`, `head`, `tail` and `ls` for searching and reading files: use \
the Glob, Grep and Read tools instead. If you still need grep, use `rg`.
- Separate multiple commands with `;` or `&&`, not newlines.
- Keep the working directory stable: prefer absolute paths over `cd`.
- Commands run non-interactively: stdin is empty and pagers are disabled, so never run commands \
that wait for input (editors, `git rebase -i`, prompts).
- Commands run sandboxed: only the working directory and $TMPDIR are writable, no network. If the \
sandbox blocks a needed command, retry with dangerouslyDisableSandbox (the user is asked)."""


@dataclass
class BackgroundShell:
    """A command started with run_in_background, kept in ctx.state["background_shells"]."""

    id: str
    command: str
    process: asyncio.subprocess.Process
    output_path: Path
    started: float = field(default_factory=time.time)

    @property
    def exit_code(self) -> int | None:
        return _exit_code(self.process.returncode)

    async def stop(self) -> None:
        """Kill the command and everything it started."""
        await _kill_group(self.process)


class BashTool(BaseTool):
    """`sandbox` is the `sandbox` settings block; the permission policy asks this tool
    (`sandbox_auto_allows`) so that what it vouches for is what `call` runs."""

    name = "Bash"
    description = DESCRIPTION
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to execute"},
            "timeout": {"type": "number", "description": f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})"},
            "description": {
                "type": "string",
                "description": "Clear, concise description of what this command does in 5-10 words, in active voice.",
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Set to true to run this command in the background and get an ID back at once.",
            },
            "dangerouslyDisableSandbox": {
                "type": "boolean",
                "description": "Run this command outside the sandbox (the user is asked).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def __init__(self, sandbox: SandboxConfig | None = None) -> None:
        self.sandbox = sandbox or SandboxConfig()

    def runs_sandboxed(self, input: dict[str, Any]) -> bool:
        return self.sandbox.runs_sandboxed(input)

    def leaves_sandbox(self, input: dict[str, Any]) -> bool:
        """Whether `dangerouslyDisableSandbox` takes this call out of a sandbox that would otherwise hold it."""
        return (
            bool(input.get("dangerouslyDisableSandbox"))
            and self.sandbox.enabled
            and self.sandbox.allow_unsandboxed_commands
            and sandbox.availability().ok
        )

    def sandbox_auto_allows(self, input: dict[str, Any]) -> bool:
        """Whether acceptEdits may run this call without a prompt because the sandbox contains it."""
        return self.sandbox.auto_allow_bash_if_sandboxed and self.runs_sandboxed(input)

    def unsandboxed_warning(self) -> str | None:
        """What the session says at start when Bash cannot be sandboxed."""
        return sandbox.unsandboxed_warning(self.sandbox)

    def hook_response(self, input: dict[str, Any], result: ToolResult, text: str) -> dict[str, Any]:
        """Claude Code's Bash keys.  The command's stderr is read together with its stdout (in the
        order they were written), so all of it is under `stdout`."""
        data = result.data
        response: dict[str, Any] = {
            "stdout": data.get("stdout", text) if "background_id" not in data else "",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        }
        if "background_id" in data:
            response["backgroundTaskId"] = data["background_id"]
        return response

    def is_read_only(self, input: dict[str, Any]) -> bool:
        command = input.get("command")
        return isinstance(command, str) and not input.get("run_in_background") and is_read_only_command(command)

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return self.is_read_only(input)

    async def validate(self, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if not input["command"].strip():
            return "command must not be empty."
        if "timeout" in input and input["timeout"] <= 0:
            return "timeout must be a positive number of milliseconds."
        if not ctx.cwd.is_dir():
            return f"Working directory does not exist: {ctx.cwd}"
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        command = input["command"]
        try:
            launch = self._launch(input, ctx)
        except _Unavailable as exc:
            yield ToolResult(str(exc), is_error=True)
            return
        if input.get("run_in_background"):
            yield await _start_background(command, launch, ctx)
            return
        timeout_ms = int(min(input.get("timeout") or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS))
        loop = asyncio.get_running_loop()
        started = loop.time()
        proc = await _spawn(launch, ctx, asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        capture = _Capture()
        reader = asyncio.create_task(capture.pump(proc.stdout))
        exited = asyncio.create_task(proc.wait())
        aborted = asyncio.create_task(ctx.abort.wait())
        # Set when the person sends the command to the background (Ctrl+B: `move_to_background`).
        to_background = asyncio.Event()
        foreground: set[asyncio.Event] = ctx.state.setdefault(FOREGROUND_KEY, set())
        foreground.add(to_background)
        backgrounded = asyncio.create_task(to_background.wait())
        deadline = started + timeout_ms / 1000
        stopped_by: str | None = None
        moved: ToolResult | None = None
        try:
            while not exited.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    stopped_by = "timeout"
                    break
                await asyncio.wait(
                    {exited, aborted, backgrounded}, timeout=min(PROGRESS_INTERVAL, remaining),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if aborted.done():
                    stopped_by = "abort"
                    break
                if backgrounded.done() and not exited.done():
                    reader.cancel()
                    moved = await _continue_in_background(command, proc, launch, capture, reader, ctx)
                    break
                lines = capture.take_lines()
                if lines:
                    yield Progress(lines)
            if moved is None:
                if stopped_by:
                    await _kill_group(proc)
                await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        except BaseException:
            # cancelled task or closed generator: nothing may outlive the call
            await _kill_group(proc)
            launch.finish()
            raise
        finally:
            foreground.discard(to_background)
            for task in (exited, aborted, backgrounded):
                task.cancel()
            if moved is None:
                reader.cancel()
        if moved is not None:
            yield moved  # the command goes on; the background shell owns it now
            return
        notes = launch.finish()
        result = _result(capture, _exit_code(proc.returncode), stopped_by, timeout_ms, loop.time() - started)
        if notes:
            result = ToolResult("\n\n".join([result.content, *notes]), is_error=True, data=result.data)
        result.data["sandboxed"] = launch.sandboxed
        yield result

    def _launch(self, input: dict[str, Any], ctx: ToolContext) -> _Launch:
        """The shell running the command, inside bwrap when the sandbox applies."""
        shell = [_shell(), "-c", input["command"]]
        config = self.sandbox
        if not config.enabled or config.wants_unsandboxed(input):
            return _Launch(shell)
        status = sandbox.availability()
        if not status.ok:
            if config.fail_if_unavailable:
                raise _Unavailable(
                    f"Bash is disabled: the sandbox is required (sandbox.failIfUnavailable) but {status.reason}."
                )
            return _Launch(shell)
        assert status.bwrap is not None
        program = sandbox.seccomp_filter(allow_unix_sockets=config.allow_all_unix_sockets)
        fd = sandbox.program_fd(program) if program is not None else None
        wrapped = sandbox.wrap(
            shell,
            bwrap=status.bwrap,
            cwd=ctx.cwd,
            working_dirs=ctx.working_dirs,
            tmpdir=sandbox.temp_dir(ctx.state),
            config=config,
            seccomp_fd=fd,
            quarantine=ctx.session_dir / "removed-by-sandbox" if ctx.session_dir else None,
        )
        return _Launch(wrapped.argv, sandboxed=True, fds=() if fd is None else (fd,), wrapped=wrapped)


@dataclass
class _Launch:
    """How to start one command: its argv, whether that is the sandbox, and descriptors bwrap reads."""

    argv: list[str]
    sandboxed: bool = False
    fds: tuple[int, ...] = ()
    # The sandbox's placeholders and watched paths, undone by `finish` once the command has exited.
    wrapped: sandbox.Wrapped | None = None

    def finish(self) -> list[str]:
        return self.wrapped.finish() if self.wrapped is not None else []


class _Unavailable(Exception):
    """The sandbox is required but cannot run."""


def _result(
    capture: _Capture, exit_code: int | None, stopped_by: str | None, timeout_ms: int, duration: float
) -> ToolResult:
    output = capture.text(MAX_RESULT_CHARS).rstrip("\n")
    data = {"exit_code": exit_code, "stdout": capture.text(MAX_UI_CHARS), "duration": duration}
    if stopped_by == "timeout":
        return ToolResult(_join(output, f"Command timed out after {timeout_ms}ms"), is_error=True, data=data)
    if stopped_by == "abort":
        return ToolResult(_join(output, "Command was interrupted by the user."), is_error=True, data=data)
    if exit_code:
        return ToolResult(_join(output, f"Exit code {exit_code}"), is_error=True, data=data)
    return ToolResult(output or NO_OUTPUT, data=data)


def _join(output: str, status: str) -> str:
    return f"{output}\n\n{status}" if output else status


def _exit_code(returncode: int | None) -> int | None:
    # killed by signal N: report it the way a shell would (128 + N)
    return 128 - returncode if returncode is not None and returncode < 0 else returncode


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "/bin/sh"


# git configuration that runs programs, set to harmless values on every git the agent runs (through
# GIT_CONFIG_COUNT, after the user's own): none of them changes what a command reads or writes.
GIT_NEUTRAL_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("protocol.ext.allow", "never"),
)


def git_config_env(environ: dict[str, str]) -> dict[str, str]:
    """The GIT_CONFIG_COUNT/KEY_n/VALUE_n variables appending GIT_NEUTRAL_CONFIG to `environ`'s own."""
    try:
        start = max(0, int(environ.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        start = 0
    extra = {"GIT_CONFIG_COUNT": str(start + len(GIT_NEUTRAL_CONFIG))}
    for i, (key, value) in enumerate(GIT_NEUTRAL_CONFIG, start=start):
        extra[f"GIT_CONFIG_KEY_{i}"] = key
        extra[f"GIT_CONFIG_VALUE_{i}"] = value
    return extra


async def _spawn(launch: _Launch, ctx: ToolContext, stdout: Any) -> asyncio.subprocess.Process:
    env = {**os.environ, "PAGER": "cat", "GIT_PAGER": "cat", "GIT_EDITOR": "true"}
    env.update(git_config_env(env))
    if launch.sandboxed:
        env["TMPDIR"] = str(sandbox.temp_dir(ctx.state))
    try:
        return await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=ctx.cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            pass_fds=launch.fds,
        )
    finally:
        for fd in launch.fds:
            os.close(fd)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, wait briefly for it to go, then SIGKILL what remains."""
    pgid = proc.pid  # start_new_session made the shell its group leader
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + KILL_GRACE
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE)
    while loop.time() < deadline and _group_exists(pgid):
        await asyncio.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    await proc.wait()
    # SIGKILL lands asynchronously: return once nothing in the group runs (bounded, for stuck I/O).
    deadline = loop.time() + KILL_GRACE
    while loop.time() < deadline and _group_exists(pgid):
        await asyncio.sleep(0.01)


def _group_exists(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    # orphans the init process has not reaped yet still count for killpg; skip them
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, group = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state != "Z":
            return True
    return False


async def _start_background(command: str, launch: _Launch, ctx: ToolContext) -> ToolResult:
    shells: dict[str, BackgroundShell] = ctx.state.setdefault("background_shells", {})
    shell_id = f"bash_{len(shells) + 1}"
    folder = ctx.session_dir / "background" if ctx.session_dir else Path(tempfile.mkdtemp(prefix="agent-tui-"))
    folder.mkdir(parents=True, exist_ok=True)
    output_path = folder / f"{shell_id}.log"
    with output_path.open("wb") as out:
        proc = await _spawn(launch, ctx, out)
    shells[shell_id] = BackgroundShell(shell_id, command, proc, output_path)
    if launch.wrapped is not None:
        task = asyncio.ensure_future(_finish_after(proc, launch, output_path))
        _FINISHING.add(task)
        task.add_done_callback(_FINISHING.discard)
    return ToolResult(
        f"Command running in background with ID: {shell_id}\nOutput is being written to: {output_path}\n"
        f"Read that file for its output; stop it with KillShell.",
        data={"background_id": shell_id, "output_path": str(output_path), "pid": proc.pid,
              "sandboxed": launch.sandboxed},
    )


_FINISHING: set[asyncio.Future[None]] = set()
# ctx.state key: one Event per running foreground Bash call, set to send it to the background.
FOREGROUND_KEY = "bash_foreground"


def move_to_background(state: dict[str, Any]) -> int:
    """Send every running foreground Bash command to the background (Ctrl+B): each keeps running,
    its output going to a background log, and its call returns saying so.  How many there were."""
    running: set[asyncio.Event] = state.get(FOREGROUND_KEY, set())
    waiting = [event for event in running if not event.is_set()]
    for event in waiting:
        event.set()
    return len(waiting)


async def _continue_in_background(command: str, proc: asyncio.subprocess.Process, launch: _Launch,
                                  capture: _Capture, reader: asyncio.Task[None], ctx: ToolContext) -> ToolResult:
    """A running command becomes a background shell: what it printed so far, then the rest of its
    output, go to its log; KillShell stops it, and the session's end kills it as any other."""
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    shells: dict[str, BackgroundShell] = ctx.state.setdefault("background_shells", {})
    shell_id = f"bash_{len(shells) + 1}"
    folder = ctx.session_dir / "background" if ctx.session_dir else Path(tempfile.mkdtemp(prefix="agent-tui-"))
    folder.mkdir(parents=True, exist_ok=True)
    output_path = folder / f"{shell_id}.log"
    so_far = capture.text(MAX_UI_CHARS)
    output_path.write_text(so_far, encoding="utf-8")
    shells[shell_id] = BackgroundShell(shell_id, command, proc, output_path)
    task = asyncio.ensure_future(_log_rest(proc, launch, output_path))
    _FINISHING.add(task)
    task.add_done_callback(_FINISHING.discard)
    return ToolResult(
        f"The user sent this command to the background; it is still running with ID: {shell_id}\n"
        f"Its output so far and from now on is written to: {output_path}\n"
        "Read that file for its output; stop it with KillShell.",
        data={"background_id": shell_id, "output_path": str(output_path), "pid": proc.pid,
              "sandboxed": launch.sandboxed, "moved_to_background": True, "output_so_far": so_far},
    )


async def _log_rest(proc: asyncio.subprocess.Process, launch: _Launch, output_path: Path) -> None:
    assert proc.stdout is not None
    try:
        with output_path.open("ab") as out:
            while chunk := await proc.stdout.read(1 << 16):
                out.write(chunk)
                out.flush()
    finally:
        await _finish_after(proc, launch, output_path)


async def _finish_after(proc: asyncio.subprocess.Process, launch: _Launch, output_path: Path) -> None:
    """Undo a background command's sandbox placeholders once it has exited; notes go to its output file."""
    try:
        await proc.wait()
    finally:
        notes = launch.finish()
        if notes:
            with contextlib.suppress(OSError), output_path.open("a") as out:
                out.write("\n" + "\n".join(notes) + "\n")


class _Capture:
    """The command's merged output: head and tail kept, a flood in the middle only counted."""

    KEEP = MAX_UI_CHARS // 2

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.head = ""
        self.tail = ""
        self.dropped = 0
        self._unreported = ""

    async def pump(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            self._feed(self._decoder.decode(chunk))
        self._feed(self._decoder.decode(b"", final=True))

    def _feed(self, text: str) -> None:
        self._unreported += text
        if len(self._unreported) > MAX_PROGRESS_CHARS:
            # keep the newest whole lines
            kept = self._unreported[-MAX_PROGRESS_CHARS:]
            self._unreported = kept.partition("\n")[2] if "\n" in kept else kept
        room = self.KEEP - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        self.tail += text
        if len(self.tail) > 2 * self.KEEP:
            cut = len(self.tail) - self.KEEP
            self.dropped += cut
            self.tail = self.tail[cut:]

    def take_lines(self) -> str:
        """Complete lines printed since the last call (the newest ones, if there were many)."""
        complete, newline, rest = self._unreported.rpartition("\n")
        if not newline:
            return ""
        self._unreported = rest
        return complete

    def text(self, limit: int) -> str:
        """The output, its middle replaced by a marker if longer than `limit`."""
        whole = self.head + self.tail
        if not self.dropped and len(whole) <= limit:
            return whole
        half = limit // 2
        truncated = len(whole) - 2 * half + self.dropped
        return f"{whole[:half]}\n\n... [{truncated} characters truncated] ...\n\n{whole[-half:]}"


class KillShellTool(BaseTool):
    """KillShell: stop a command started with `run_in_background` (Claude Code's name and schema).

    A sandboxed command has its own PID namespace, so a later command cannot `kill` it: this is how the
    model stops what it started.  Only shells of this session can be named, so it asks no permission."""

    name = "KillShell"
    description = (
        "Kills a running background bash shell by its ID (the ID Bash returned for run_in_background).\n"
        "- Returns a success or failure status\n- Use this tool when you need to terminate a long-running shell"
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"shell_id": {"type": "string", "description": "The ID of the background shell to kill"}},
        "required": ["shell_id"],
        "additionalProperties": False,
    }

    def summarize(self, input: dict[str, Any]) -> str:
        return str(input.get("shell_id", ""))

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> AsyncIterator[Progress | ToolResult]:
        shells: dict[str, BackgroundShell] = ctx.state.get("background_shells", {})
        shell = shells.get(input["shell_id"])
        if shell is None:
            known = ", ".join(sorted(shells)) or "none"
            yield ToolResult(f"No background shell with ID {input['shell_id']} (running or finished: {known}).",
                             is_error=True)
            return
        if shell.exit_code is not None:
            yield ToolResult(f"Shell {shell.id} had already exited with code {shell.exit_code}.")
            return
        await shell.stop()
        yield ToolResult(f"Successfully killed shell: {shell.id} ({one_line(shell.command, 80)})")
