"""The Bash sandbox: each command runs inside bubblewrap (`bwrap`) when it is available.

Inside, the whole filesystem is mounted read-only except the working
directories, a private temporary directory (`$TMPDIR`) and the paths in
`sandbox.filesystem.allowWrite`; settings files, `.git/hooks` and
`.git/config` stay read-only even inside the project; credential folders
(`~/.ssh`, `~/.aws`, ...) are hidden behind empty mounts; the network is a
fresh namespace with only loopback unless `sandbox.network.allowedDomains`
is non-empty (domains are not filtered: a non-empty list turns the whole
network on); creating Unix sockets is refused by a seccomp filter unless
`sandbox.network.allowAllUnixSockets` (a socket file such as Docker's would
otherwise be a way out).  The settings mirror Claude Code's `sandbox` block.

bwrap runs without `--new-session` and without a PID namespace: the command
stays in the process group the Bash tool kills on timeout or abort, and the
model can still see and stop the background commands it started earlier.
`--die-with-parent` takes the sandbox down if bwrap itself is killed.
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
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_tui.shell.parse import CommandPart, Redirect, Word, parse_command

if TYPE_CHECKING:
    from agent_tui.config import Settings

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
# Inside a writable working directory, these stay read-only (settings and git's code-running files).
PROTECTED_IN_PROJECT = (".agent-tui", ".git/hooks", ".git/config")
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

    @classmethod
    def from_settings(cls, settings: Settings | None) -> SandboxConfig:
        """From `Settings.sandbox` (already validated by config.py); None or {} gives the defaults."""
        table: Mapping[str, Any] = settings.sandbox if settings is not None else {}
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
    program = unix_socket_filter()
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
) -> list[str]:
    """`argv` run inside bwrap with this sandbox's mounts.  Creates `<cwd>/.agent-tui` when it is
    missing, so a command cannot create the settings folder and grant itself permissions.
    `seccomp_fd` is a readable descriptor holding `unix_socket_filter()`, passed to the child."""
    home = home or Path.home()
    cwd = Path(os.path.realpath(cwd))
    writable = _existing([cwd, *working_dirs, tmpdir, *_expand(config.allow_write, cwd, home)])
    with contextlib.suppress(OSError):
        (cwd / ".agent-tui").mkdir(exist_ok=True)
    private = Path(os.path.realpath(tmpdir))
    protected = [d / name for d in writable if d != private for name in PROTECTED_IN_PROJECT]
    read_only = _existing([*protected, *settings_dirs, *_expand(config.deny_write, cwd, home)])
    hidden = _existing(_expand((*SECRET_PATHS, *config.deny_read), cwd, home))
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    for path in read_only:
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
    args += ["--die-with-parent", "--chdir", str(cwd), "--", *argv]
    return args


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


# ------------------------------------------------------------ Unix sockets: a seccomp filter

# Per architecture: (AUDIT_ARCH_* value, the socket(2) syscall number).
_ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """A seccomp BPF program refusing socket(AF_UNIX, ...) (EPERM), for bwrap's `--seccomp FD`.

    A network namespace cuts TCP but not sockets on the filesystem (a Docker socket is a way out);
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
        (_JEQ, 0, 3, socket_nr),
        (_LD_ABS, 0, 0, 16),  # low half of seccomp_data.args[0] (little-endian)
        (_JEQ, 0, 1, _AF_UNIX),
        (_RET, 0, 0, deny),
        (_RET, 0, 0, _ALLOW),
    ]
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
