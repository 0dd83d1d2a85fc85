"""The Bash sandbox: each command runs inside bubblewrap (`bwrap`) when it is available.

Inside, the whole filesystem is mounted read-only except the working
directories, a private temporary directory (`$TMPDIR`) and the paths in
`sandbox.filesystem.allowWrite`.  Inside those, every protected path of
`shell/protected.py` stays read-only and cannot be renamed or replaced:
agent and Claude Code settings, `.mcp.json`, editor and CI configuration,
`.git` except what a commit writes, shell startup files; agent-tui's own
config, data and cache folders are read-only whatever `allowWrite` says.
Credential folders (`~/.ssh`, `~/.aws`, ...) are hidden behind empty mounts
and API keys are removed from the environment (`sandbox.passEnv` keeps some);
the network is a fresh namespace with only loopback unless
`sandbox.network.allowedDomains` is non-empty (domains are not filtered: a
non-empty list turns the whole network on); a seccomp filter refuses io_uring
and, unless `sandbox.network.allowAllUnixSockets`, creating Unix sockets (a
socket file such as Docker's would otherwise be a way out).  The settings
mirror Claude Code's `sandbox` block.

The sandbox has its own PID namespace: a command cannot see or signal
agent-tui or anything else outside it, and whatever it leaves running ends
with its shell.  bwrap runs without `--new-session`, so the command stays in
the process group the Bash tool kills on timeout or abort; `--die-with-parent`
takes the sandbox down if bwrap itself is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui.paths import own_dirs
from agent_tui.shell.parse import CommandPart, Redirect, Word, parse_command
from agent_tui.shell.protected import (
    GIT_DIR_NO_PLACEHOLDER,
    GIT_DIR_PROTECTED,
    HOME_DIRS,
    HOME_FILES,
    PROJECT_DIRS,
    PROJECT_FILES,
)

# Credentials a sandboxed command never sees (hidden behind an empty mount when they exist).
SECRET_PATHS = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
)
SELF_TEST_TIMEOUT = 10.0
# Words that move the shell elsewhere: relative paths after them cannot be checked statically.
_CHANGES_DIRECTORY = frozenset({"cd", "pushd", "popd"})
# Where a path may hide inside one word: `--file=../x`, `HEAD:../x`, `a,../b`.
_PATH_SEPARATORS = re.compile(r"[=:,]")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """The `sandbox` settings block (Claude Code's keys), with this project's defaults."""

    # On by default here (Claude Code defaults to off): Bash is sandboxed wherever bwrap works.
    enabled: bool = True
    # In acceptEdits, a sandboxed command that stays inside the project runs without a prompt.
    # Off by default here (Claude Code: on): the static path check does not yet see globs such as
    # `.*` reaching `..`, nor commands that print the environment.
    auto_allow_bash_if_sandboxed: bool = False
    # Commands (prefixes, `docker` or `docker:*`) that always run outside the sandbox, after a prompt.
    excluded_commands: tuple[str, ...] = ()
    # False: `dangerouslyDisableSandbox` is ignored and every command runs sandboxed.
    allow_unsandboxed_commands: bool = True
    # True: when bwrap is unavailable Bash refuses to run instead of running unsandboxed.
    fail_if_unavailable: bool = False
    # Non-empty: the network is on (the domains themselves are not enforced).
    allowed_domains: tuple[str, ...] = ()
    # True: sandboxed commands may create Unix sockets (Docker's, an ssh agent's).
    allow_all_unix_sockets: bool = False
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    # Environment variables holding credentials that sandboxed commands may still see.
    pass_env: tuple[str, ...] = ()

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> SandboxConfig:
        """From the settings' `sandbox` block (already validated by config.py, passed by the front end's
        side); None or {} gives the defaults."""
        table = table or {}
        network = table.get("network") or {}
        filesystem = table.get("filesystem") or {}
        return cls(
            enabled=table.get("enabled", True),
            auto_allow_bash_if_sandboxed=table.get("autoAllowBashIfSandboxed", False),
            excluded_commands=tuple(table.get("excludedCommands", ())),
            allow_unsandboxed_commands=table.get("allowUnsandboxedCommands", True),
            fail_if_unavailable=table.get("failIfUnavailable", False),
            allowed_domains=tuple(network.get("allowedDomains", ())),
            allow_all_unix_sockets=network.get("allowAllUnixSockets", False),
            allow_write=tuple(filesystem.get("allowWrite", ())),
            deny_write=tuple(filesystem.get("denyWrite", ())),
            deny_read=tuple(filesystem.get("denyRead", ())),
            pass_env=tuple(table.get("passEnv", ())),
        )

    @property
    def network_allowed(self) -> bool:
        return bool(self.allowed_domains)

    def wants_unsandboxed(self, input: Mapping[str, Any]) -> bool:
        """Whether this call asks to leave the sandbox (the escape hatch or an excluded command)."""
        if input.get("dangerouslyDisableSandbox") and self.allow_unsandboxed_commands:
            return True
        command = input.get("command")
        return isinstance(command, str) and is_excluded(command, self.excluded_commands)

    def runs_sandboxed(self, input: Mapping[str, Any]) -> bool:
        """Whether the Bash call `input` will run inside the sandbox."""
        return self.enabled and availability().ok and not self.wants_unsandboxed(input)


@dataclass(frozen=True, slots=True)
class Availability:
    ok: bool
    bwrap: str | None = None
    # Why the sandbox cannot be used (empty when ok).
    reason: str = ""


def availability() -> Availability:
    """Whether bwrap is on PATH and passes its self-test (cached per bwrap path)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Availability(False, None, "bubblewrap (bwrap) is not installed")
    return _self_test(os.path.realpath(bwrap))


@functools.lru_cache(maxsize=8)
def _self_test(bwrap: str) -> Availability:
    # The same namespaces a real command uses: a mount namespace, a network namespace, /proc, /dev.
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
            "--die-with-parent"]
    program = seccomp_filter()
    fd = program_fd(program) if program is not None else None
    if fd is not None:
        argv += ["--seccomp", str(fd)]
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=SELF_TEST_TIMEOUT,
                              stdin=subprocess.DEVNULL, pass_fds=() if fd is None else (fd,))
    except (OSError, subprocess.SubprocessError) as exc:
        return Availability(False, bwrap, f"bwrap failed its self-test: {exc}")
    finally:
        if fd is not None:
            os.close(fd)
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        detail = why[-1] if why else f"exit code {done.returncode}"
        return Availability(False, bwrap, f"bwrap failed its self-test: {detail}")
    return Availability(True, bwrap)


def unsandboxed_warning(config: SandboxConfig) -> str | None:
    """The notice a session shows when the sandbox is wanted but cannot run; None otherwise."""
    if not config.enabled:
        return None
    status = availability()
    if status.ok:
        return None
    if config.fail_if_unavailable:
        return f"Bash is disabled: the sandbox is required (sandbox.failIfUnavailable) but {status.reason}."
    return f"Bash runs unsandboxed: {status.reason}. Install bubblewrap to sandbox it."


def is_excluded(command: str, patterns: Iterable[str]) -> bool:
    """Whether any simple command in `command` starts with an excluded command prefix."""
    prefixes = [p.strip().removesuffix(":*").removesuffix("*").strip() for p in patterns]
    prefixes = [p for p in prefixes if p]
    if not prefixes:
        return False
    parsed = parse_command(command)
    if parsed is None:
        return False  # unparseable: stay in the sandbox
    for part in parsed.every_part():
        text = part.normalized()
        if any(text == p or text.startswith(p + " ") for p in prefixes):
            return True
    return False


# ------------------------------------------------------------ the bwrap command line


def temp_dir(state: dict[str, Any]) -> Path:
    """This session's private `$TMPDIR` for sandboxed commands (created once, removed at exit)."""
    path = state.get("sandbox_tmpdir")
    if path is None or not Path(path).is_dir():
        path = Path(tempfile.mkdtemp(prefix="agent-tui-tmp-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        state["sandbox_tmpdir"] = path
    return Path(path)


@dataclass
class Wrapped:
    """A command ready to run inside bwrap, and what to undo once it has exited.

    `finish()` (call it exactly once, after the command and everything it started have exited)
    removes the placeholders this command needed, and moves aside any protected file the command
    created where none was (a placeholder there would show in `git status`); it returns one line per
    file moved, for the tool result."""

    argv: list[str]
    placeholders: list[Path]
    watched: list[Path]
    quarantine: Path
    # Protected paths that are symlinks (a symlink cannot be mounted over): put back if replaced.
    links: list[tuple[Path, str]] = field(default_factory=list)
    _done: bool = False

    def finish(self) -> list[str]:
        if self._done:
            return []
        self._done = True
        _release(self.placeholders)
        notes = []
        for path in self.watched:
            if path.exists() or path.is_symlink():
                notes.append(self._move_aside(path, "created"))
        for path, target in self.links:
            with contextlib.suppress(OSError):
                if path.is_symlink() and os.readlink(path) == target:
                    continue
            if path.exists() or path.is_symlink():
                notes.append(self._move_aside(path, "put in place of a symlink"))
            with contextlib.suppress(OSError):
                os.symlink(target, path)
        return notes

    def _move_aside(self, path: Path, what: str) -> str:
        self.quarantine.mkdir(parents=True, exist_ok=True)
        kept = self.quarantine / f"{len(list(self.quarantine.iterdir())) + 1}-{path.name}"
        try:
            os.rename(path, kept)
        except OSError as exc:
            return f"The sandbox could not remove {path}, which the command {what}: {exc}."
        return (
            f"The sandbox removed {path}, which the command {what}: sandboxed commands cannot create files "
            f"that configure agents, editors, git or the shell (kept at {kept})."
        )


# Placeholders (empty folders or files made so that a missing protected path can be mounted read-only),
# counted by the commands that rely on them: removed when the last one has exited.
_PLACEHOLDERS: dict[Path, int] = {}


def _placeholder(path: Path, *, folder: bool) -> bool:
    """Make (or reuse) a placeholder at `path`; False when it cannot be made."""
    if path in _PLACEHOLDERS:
        _PLACEHOLDERS[path] += 1
        return True
    try:
        if folder:
            path.mkdir()
        else:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o444)
            os.close(fd)
    except OSError:
        return False
    _PLACEHOLDERS[path] = 1
    return True


def _release(paths: Iterable[Path]) -> None:
    for path in paths:
        count = _PLACEHOLDERS.get(path, 0) - 1
        if count > 0:
            _PLACEHOLDERS[path] = count
            continue
        _PLACEHOLDERS.pop(path, None)
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only when still empty
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()


atexit.register(lambda: _release(list(_PLACEHOLDERS)))


def own_installation() -> list[Path]:
    """Where the running agent-tui and the libraries it loads live: a command that rewrote them would run
    its code inside the next agent-tui.  The virtual environment when there is one (a project's own
    `.venv` among them: `pip install` there then needs `dangerouslyDisableSandbox`), and the package
    folder when it is installed rather than run from a source checkout."""
    import agent_tui

    paths = []
    if sys.prefix != sys.base_prefix:
        paths.append(Path(sys.prefix))
    package = Path(agent_tui.__file__).resolve().parent
    if package.parent.name in ("site-packages", "dist-packages"):
        paths.append(package)
    return paths


def wrap(
    argv: list[str],
    *,
    bwrap: str,
    cwd: Path,
    working_dirs: Iterable[Path],
    tmpdir: Path,
    config: SandboxConfig,
    home: Path | None = None,
    settings_dirs: Iterable[Path] = (),
    seccomp_fd: int | None = None,
    quarantine: Path | None = None,
) -> Wrapped:
    """`argv` run inside bwrap with this sandbox's mounts (see `shell/protected.py` for the table).

    Writable: the working directories, `tmpdir` and `allowWrite`.  Read-only inside them: every
    protected path; each protected folder, and each folder on the way to one, is also mounted onto
    itself so that it cannot be renamed or replaced.  Missing protected folders get an empty
    placeholder for the command's lifetime; missing protected files are watched (`Wrapped.finish`).
    `settings_dirs` (and agent-tui's own folders) are read-only whatever `allowWrite` says.
    `seccomp_fd` is a readable descriptor holding `seccomp_filter()`, passed to the child."""
    home = Path(os.path.realpath(home or Path.home()))
    cwd = Path(os.path.realpath(cwd))
    writable = _existing([cwd, *working_dirs, tmpdir, *_expand(config.allow_write, cwd, home)])
    with contextlib.suppress(OSError):
        (cwd / ".agent-tui").mkdir(exist_ok=True)
    private = Path(os.path.realpath(tmpdir))
    roots = [d for d in writable if d != private]
    plan = _Protection(roots)
    for root in roots:
        plan.project(root)
    for name in (*HOME_FILES, *HOME_DIRS):
        path = home / name
        if plan.writable(path):
            plan.protect(path, folder=name in HOME_DIRS)
    own = []
    # agent-tui's own folders (`paths.own_dirs`), whoever calls: never writable from the sandbox.
    for folder in dict.fromkeys([*settings_dirs, *own_dirs()]):
        # made now (they are agent-tui's own) so that a command cannot create them with its own contents
        with contextlib.suppress(OSError):
            Path(folder).mkdir(parents=True, exist_ok=True)
        own.append(folder)
    read_only = _existing([*own, *own_installation(), *_expand(config.deny_write, cwd, home)])
    hidden = _existing(_expand((*SECRET_PATHS, *config.deny_read), cwd, home))
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    for path in plan.pinned:
        args += ["--bind", str(path), str(path)]
    for path in [*plan.read_only, *read_only]:
        args += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        if path.is_dir():
            args += ["--perms", "0700", "--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    if not config.network_allowed:
        args.append("--unshare-net")
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for name in sorted(_scrubbed_env(os.environ, config.pass_env)):
        args += ["--unsetenv", name]
    args += ["--unshare-pid", "--die-with-parent", "--chdir", str(cwd), "--", *argv]
    where = quarantine or private / "removed-by-sandbox"
    return Wrapped(args, plan.placeholders, plan.watched, where, plan.links)


class _Protection:
    """The mounts that keep the protected paths under the writable roots read-only."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.pinned: list[Path] = []  # bound onto themselves (writable): renaming them fails
        self.read_only: list[Path] = []
        self.placeholders: list[Path] = []
        self.watched: list[Path] = []
        self.links: list[tuple[Path, str]] = []

    def writable(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in self.roots)

    def project(self, root: Path) -> None:
        for name in PROJECT_DIRS:
            self.protect(root / name, folder=True)
        for name in PROJECT_FILES:
            self.protect(root / name, folder=False)
        self.git(root / ".git")

    def git(self, path: Path) -> None:
        if path.is_symlink():
            path = Path(os.path.realpath(path))
        if path.is_file():
            self._read_only(path)
            target = _gitdir_of(path)
            if target is not None and self.writable(target):
                self.git_dir(target)
        elif path.is_dir():
            self.git_dir(path)
        # no .git: nothing to protect (a placeholder would break `git init`)

    def git_dir(self, path: Path) -> None:
        self._pin(path)
        for name in GIT_DIR_PROTECTED:
            if name in GIT_DIR_NO_PLACEHOLDER and not (path / name).exists():
                self.watched.append(path / name)
            else:
                self.protect(path / name, folder=name not in ("config", "config.worktree"))

    def protect(self, path: Path, *, folder: bool) -> None:
        """Read-only `path`; its missing folders get a placeholder, a missing file is watched."""
        folder_wanted = folder
        if path.is_symlink():
            with contextlib.suppress(OSError):
                self.links.append((path, os.readlink(path)))
        if path.is_symlink() or path.exists():
            real = Path(os.path.realpath(path))
            if not self.writable(real):
                return  # already read-only (outside every writable root)
            for parent in _between(real.parent, self.roots):
                self._pin(parent)
            self._read_only(real)
            return
        missing = path
        while not (missing.parent.exists() or missing.parent.is_symlink()):
            missing = missing.parent
        parent = Path(os.path.realpath(missing.parent))
        if not parent.is_dir() or not self.writable(parent):
            return
        missing = parent / missing.name
        for folder in _between(parent, self.roots):
            self._pin(folder)
        if missing != path or folder_wanted:
            if _placeholder(missing, folder=True):
                self.placeholders.append(missing)
                self._read_only(missing)
        else:
            self.watched.append(missing)

    def _pin(self, path: Path) -> None:
        if path not in self.pinned and path not in self.roots:
            self.pinned.append(path)

    def _read_only(self, path: Path) -> None:
        if path not in self.read_only:
            self.read_only.append(path)


def _between(path: Path, roots: list[Path]) -> list[Path]:
    """The folders from the writable root holding `path` down to `path` itself (root excluded), top first."""
    for root in roots:
        if path == root or root in path.parents:
            chain = []
            while path != root:
                chain.append(path)
                path = path.parent
            return chain[::-1]
    return []


def _gitdir_of(dotgit: Path) -> Path | None:
    """The folder a `.git` file (`gitdir: <path>`, as in worktrees and submodules) points to."""
    try:
        text = dotgit.read_text(errors="replace")[:4096]
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            target = Path(line.split(":", 1)[1].strip())
            return Path(os.path.realpath(dotgit.parent / target))
    return None


# Environment variables that hold credentials for model APIs and clouds: a sandboxed command does not see
# them unless `sandbox.passEnv` names them.
_SECRET_ENV = re.compile(
    r"(?:ANTHROPIC|OPENAI|AWS|AZURE|GEMINI|GROQ|MISTRAL|COHERE|TOGETHER|FIREWORKS|DEEPSEEK|XAI|OPENROUTER)_\w*|"
    r"\w*_(?:API_KEY|TOKEN|SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD)|AGENT_TUI_API_KEY"
)


def _scrubbed_env(env: Mapping[str, str], passed: Iterable[str]) -> set[str]:
    """The variables of `env` removed inside the sandbox."""
    keep = set(passed)
    return {name for name in env if _SECRET_ENV.fullmatch(name) and name not in keep}


def _expand(paths: Iterable[str], cwd: Path, home: Path) -> list[Path]:
    """Settings paths: `~/x` from home, `//abs` and `/abs` absolute, others from cwd."""
    out = []
    for text in paths:
        if text.startswith("~/") or text == "~":
            path = home / text[2:]
        else:
            path = cwd / text.lstrip("/") if not text.startswith("/") else Path("/" + text.lstrip("/"))
        out.append(path)
    return out


def _existing(paths: Iterable[Path]) -> list[Path]:
    """Real paths that exist, without duplicates, in order (bwrap needs the mount points)."""
    seen: dict[Path, None] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.exists() or real.is_symlink():
            seen.setdefault(real, None)
    return list(seen)


# ------------------------------------------------------------ a seccomp filter: Unix sockets, io_uring

# Per architecture: (AUDIT_ARCH_* value, the socket(2) syscall number).
_ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
# io_uring_setup, io_uring_enter, io_uring_register: the same numbers on both architectures.
_IO_URING = (425, 428)
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


def seccomp_filter(machine: str | None = None, *, allow_unix_sockets: bool = False) -> bytes | None:
    """A seccomp BPF program for bwrap's `--seccomp FD`.

    It refuses io_uring (ENOSYS, so programs fall back to ordinary system calls: io_uring's requests
    are not seen by seccomp at all) and, unless `allow_unix_sockets`, socket(AF_UNIX, ...) (EPERM): a
    network namespace cuts TCP but not sockets on the filesystem (a Docker socket is a way out);
    socketpair() stays allowed.  Foreign-ABI syscalls (i386, x32) are refused so they cannot
    sidestep it.  None on architectures without a table entry.
    """
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, socket_nr = arch
    deny = _ERRNO | errno.EPERM
    program = [
        (_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 1, 0, audit_arch),
        (_RET, 0, 0, deny),
        (_LD_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JGE, 0, 1, _X32_SYSCALL_BIT),
        (_RET, 0, 0, deny),
        (_JGE, 0, 2, _IO_URING[0]),
        (_JGE, 1, 0, _IO_URING[1]),
        (_RET, 0, 0, _ERRNO | errno.ENOSYS),
    ]
    if not allow_unix_sockets:
        program += [
            (_JEQ, 0, 3, socket_nr),
            (_LD_ABS, 0, 0, 16),  # low half of seccomp_data.args[0] (little-endian)
            (_JEQ, 0, 1, _AF_UNIX),
            (_RET, 0, 0, deny),
        ]
    program.append((_RET, 0, 0, _ALLOW))
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def program_fd(program: bytes) -> int:
    """A descriptor bwrap can read `program` from (a pipe already holding it; the caller closes it)."""
    read, write = os.pipe()
    try:
        os.write(write, program)  # far below a pipe's buffer: never blocks
    finally:
        os.close(write)
    return read


# ------------------------------------------------------------ what auto-allow may vouch for


def stays_inside(command: str, inside: Callable[[str], bool], resolve: Callable[[str], str]) -> bool:
    """Whether every path `command` names is known before it runs and inside the working directories.

    Conservative: any expansion, `cd`, brace or tilde form that is not plain `~/`, or code hidden from
    the parser makes it False.  The program (first word) may live anywhere: running /usr/bin/x is fine.
    """
    parsed = parse_command(command)
    if parsed is None or any(p.hidden for p in parsed.every_command()):
        return False
    # `{ cat; } < ../x`: redirections of compound commands belong to no simple command
    redirects = [r for each in parsed.every_command() for r in each.compound_redirects]
    return all(_part_stays_inside(part, inside, resolve) for part in parsed.every_part()) and _redirects_ok(
        redirects, inside, resolve
    )


def _part_stays_inside(part: CommandPart, inside: Callable[[str], bool], resolve: Callable[[str], str]) -> bool:
    if part.name in _CHANGES_DIRECTORY:
        return False
    for assignment in part.assignments:
        if not _text_stays_inside(assignment.partition("=")[2], inside, resolve):
            return False
    for word in part.words[1:]:
        if not _word_stays_inside(word, inside, resolve):
            return False
    return _redirects_ok(part.redirects, inside, resolve)


def _redirects_ok(redirects: Iterable[Redirect], inside: Callable[[str], bool], resolve: Callable[[str], str]) -> bool:
    for redirect in redirects:
        target = redirect.target
        if target is None or target.value.isdigit() or target.value in ("/dev/null", "-"):
            continue
        if not _word_stays_inside(target, inside, resolve):
            return False
    return True


def _word_stays_inside(word: Word, inside: Callable[[str], bool], resolve: Callable[[str], str]) -> bool:
    if word.expands or "$" in word.value or "`" in word.value:
        return False
    return _text_stays_inside(word.value, inside, resolve)


def _text_stays_inside(text: str, inside: Callable[[str], bool], resolve: Callable[[str], str]) -> bool:
    if "{" in text and "}" in text:
        return False  # brace expansion can build any path
    candidates = [text, *_PATH_SEPARATORS.split(text)]
    if text.startswith("-") and not text.startswith("--"):
        candidates.append(text[2:])  # `-f../x`: a short option glued to its value
    for candidate in candidates:
        if candidate.startswith("~") and not (candidate == "~" or candidate.startswith("~/")):
            return False  # ~+, ~-, ~user
        if "/" in candidate or candidate in (".", "..", "~") or candidate.startswith(".."):
            if not inside(resolve(candidate.split("*", 1)[0].split("?", 1)[0] or ".")):
                return False
    return True
