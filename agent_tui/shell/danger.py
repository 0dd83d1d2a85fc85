"""Dangerous shell forms: the commands that always ask, with the reason the prompt shows.

`danger_reason(command)` looks at every simple command (including those in
substitutions and in the scripts a command runs, after wrappers such as
`timeout`, `env` or `xargs`), every pipeline and every function definition:
rm of a broad target (a root, a home, a parent, the project), `dd of=`,
mkfs, fork bombs, downloads piped into a shell, `chmod -R 777`, writes to
protected places (shell startup files, git internals, agent-tui's and Claude
Code's settings, `.mcp.json`, `~/.ssh`, git's global config), force pushes in
any abbreviation, git configuration that runs commands, broad kills,
interpreters given inline code, sudo, and code hidden from the parse.  Every
folder a `cd` may lead to counts for relative paths.
A command that does not parse is dangerous too: nothing in it can be checked.
`sensitive_write_reason(path)` is the file-path half, shared with the file tools.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

from .parse import SHELLS, CommandPart, ParsedCommand, Redirect, Word, parse_command, unwrap, unwrap_steps
from .paths import expand_tilde, static
from .protected import PROTECTED_NAMES_PATTERN, SHELL_STARTUP_FILES, project_reason

ROOT_RUNNERS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
INTERPRETERS = SHELLS | frozenset({
    "python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "deno", "bun", "source", ".", "eval",
})
# Commands whose operands are all written (or removed, or re-permissioned).
_WRITES_OPERANDS = frozenset({
    "rm", "unlink", "shred", "truncate", "touch", "chmod", "chown", "chgrp", "mkdir", "rmdir", "mv", "tee",
})
# Commands that write their last operand (or the -t folder).
_WRITES_DESTINATION = frozenset({"cp", "install", "ln", "rsync", "scp"})
# Names that mark a place whose change lets a later command run code or grant permissions.
_PROTECTED_TEXT = re.compile(rf"(?:^|[\s/'\"=}}:])({PROTECTED_NAMES_PATTERN})(?=$|[\s/'\"$;&|)])")
# Interpreters and the options that take a program on the command line.
_INLINE_CODE = {"perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "bun": "e", "lua": "e", "php": "r"}
_PYTHON = re.compile(r"(?:python|pypy)[\d.]*")
# git configuration keys whose value is a command git runs (or more configuration to read).
_GIT_EXEC_KEYS = re.compile(
    r"core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy|alternaterefscommand)|"
    r"alias\..+|pager\..+|sequence\.editor|diff\.external|diff\..+\.(?:textconv|command)|merge\..+\.driver|"
    r"filter\..+|credential\.(?:.+\.)?helper|gpg\.(?:.+\.)?program|uploadpack\.packobjectshook|"
    r"remote\..+\.(?:uploadpack|receivepack|vcs)|protocol\..*allow|include\.path|includeif\..+|"
    r"(?:diff|merge)tool\..+|sendemail\..+|web\.browser|browser\..+|man\..+|instaweb\..+|http\..*proxy|"
    r"receive\.procreceiverefs|transfer\.fsckobjects|submodule\..+\.update",
    re.IGNORECASE,
)
# Process names a broad pkill/killall would take down with everything else.
_VITAL_PROCESSES = (
    "systemd", "init", "sshd", "bash", "sh", "zsh", "login", "tmux", "python", "python3", "node", "sudo",
    "agent-tui", "dbus-daemon", "containerd", "dockerd", "Xorg",
)
_SAFE_DEVICES = re.compile(r"/dev/(null|zero|stdout|stderr|stdin|tty|fd/\d+|random|urandom)$")
_GLOB_ONLY = re.compile(r"[*?\[\].]*[*?\[][*?\[\].]*")
_LEADING_EXPANSION = re.compile(r"^(?:\$\{[^}]*\}|\$\w+|\$\([^)]*\)|`[^`]*`)+")


def danger_reason(
    command: str, *, cwd: Path | None = None, home: Path | None = None, settings_dirs: Iterable[Path] = ()
) -> str | None:
    """Why `command` must be confirmed by a person whatever the mode and rules, or None.

    `settings_dirs`: agent-tui's own folders (`paths.own_dirs`: settings with permission rules and
    hooks, stored sessions, cached code it runs), which a command must not change unasked."""
    parsed = parse_command(command)
    if parsed is None:
        return "the command could not be parsed, so what it runs cannot be checked"
    checker = _Danger(cwd or Path.cwd(), home or Path.home(), settings_dirs)
    checker.follow_cd(parsed)
    for each in parsed.every_command():
        reason = checker.command(each)
        if reason:
            return reason
    return None


def sensitive_write_reason(
    path: str, *, cwd: Path | None = None, home: Path | None = None, settings_dirs: Iterable[Path] = ()
) -> str | None:
    """Why writing `path` needs a person: shell startup files, .git internals, agent-tui settings, devices."""
    return _Danger(cwd or Path.cwd(), home or Path.home(), settings_dirs).write_target(path)


class _Danger:
    def __init__(self, cwd: Path, home: Path, settings_dirs: Iterable[Path] = ()) -> None:
        self.cwd = cwd
        self.home = str(home)
        self.settings_dirs = [os.path.realpath(d) for d in settings_dirs]
        # Every folder a relative path may be relative to, once `cd` has run; `unknown_cwd`: one is not known.
        self.cwds = [str(cwd)]
        self.unknown_cwd = False
        self.source = ""

    def follow_cd(self, parsed: ParsedCommand) -> None:
        """Where `cd`, `pushd` and `env -C` may take later commands: each is kept, since any may be in force."""
        self.source = parsed.source
        for part in parsed.every_part():
            steps = unwrap_steps(part.argv)
            for (before, _), (after, wrapper) in zip(steps, steps[1:], strict=False):
                if wrapper == "env":
                    options = before[1 : len(before) - len(after)]
                    for i, option in enumerate(options):
                        if option in ("-C", "--chdir"):
                            self._cd(options[i + 1] if i + 1 < len(options) else None, None)
                        elif option.startswith(("--chdir=", "-C")):
                            self._cd(option.split("=", 1)[1] if "=" in option else option[2:], None)
            argv = steps[-1][0]
            if not argv or _base(argv[0]) not in ("cd", "pushd", "chdir"):
                continue
            words = part.words[len(part.words) - len(argv) :]
            operands = [w for w in words[1:] if not re.fullmatch(r"-[LPe@]+|--", w.value)]
            if not operands:
                self._cd("~" if _base(argv[0]) != "pushd" else None, None)
            else:
                self._cd(operands[0].value, operands[0])

    def _cd(self, target: str | None, word: Word | None) -> None:
        if target is None or target == "-" or (word is not None and not static(word)) or target[:1] in ("+",):
            self.unknown_cwd = True
            return
        target = expand_tilde(self._expand_home(target), self.home)
        for base in list(self.cwds):
            resolved = posixpath.normpath(posixpath.join(base, target))
            if resolved not in self.cwds:
                self.cwds.append(resolved)

    def command(self, parsed: ParsedCommand) -> str | None:
        for name, body in parsed.functions:
            if any(part.name == name for part in body):
                return f"defines a function {name!r} that calls itself (fork bomb pattern)"
        for stages in parsed.pipelines:
            reason = self._download_into_shell(stages)
            if reason:
                return reason
        for part in parsed.parts:
            reason = self.part(part)
            if reason:
                return reason
        reason = self.redirects(parsed.compound_redirects)
        if reason:
            return reason
        if parsed.hidden:
            return f"{parsed.hidden[0]}, so it cannot be checked"
        return None

    def part(self, part: CommandPart) -> str | None:
        argv, wrappers = unwrap(part.argv)
        runner = next((w for w in wrappers if w in ROOT_RUNNERS), None)
        if runner or (argv and _base(argv[0]) in ROOT_RUNNERS):
            return f"runs a command as root ({runner or _base(argv[0])})"
        reason = self.redirects(part.redirects)
        if reason:
            return reason
        if not argv:
            return None
        words = part.words[len(part.words) - len(argv) :]
        name = _base(argv[0])
        if name in INTERPRETERS:
            for sub in part.substituted:
                if _command_name(sub) in DOWNLOADERS:
                    return f"runs downloaded code ({sub.name} inside {name})"
        inline = _inline_code(name, argv, part)
        if inline:
            return inline
        if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs"):
            return f"formats a filesystem ({name})"
        if name in ("rm", "shred", "rmdir") and "xargs" in wrappers:
            return f"xargs {name} deletes whatever its input names, which cannot be checked"
        if name in ("kill", "pkill", "killall", "skill", "snice") and "xargs" in wrappers:
            return f"xargs {name} signals whatever processes its input names, which cannot be checked"
        check = _CHECKS.get(name)
        if check is not None:
            reason = check(self, argv, words)
            if reason:
                return reason
        targets = self._write_targets(name, argv, words)
        for target in targets:
            reason = self.write_word(target)
            if reason:
                return reason
        if name not in _WRITES_DESTINATION and not _reads_only(part):
            # A command whose writes are not known: any argument naming a protected place counts.
            for word in words[1:]:
                value = word.value.split("=", 1)[1] if word.value.startswith("--") and "=" in word.value else word.value
                if value and not value.startswith("-") and (not static(word) or "/" in value or value.startswith(".")):
                    reason = self.write_word(word, value)
                    if reason:
                        return reason.replace("writes to", "touches").replace("modifies", "touches")
        return None

    def redirects(self, redirects: tuple[Redirect, ...] | list[Redirect]) -> str | None:
        for redirect in redirects:
            if redirect.writes:
                reason = self.write_word(redirect.target)
                if reason:
                    return reason
        return None

    def write_word(self, word: Word, value: str | None = None) -> str | None:
        """`write_target` for a word; one only known when it runs counts if the command names a protected place."""
        value = word.value if value is None else value
        if static(word):
            return self.write_target(value)
        if word.raw.startswith("~+"):
            return self.write_target(value.replace("~+", ".", 1) if value.startswith("~+") else value)
        match = _PROTECTED_TEXT.search(word.raw) or _PROTECTED_TEXT.search(self.source)
        if match:
            return f"writes to {word.raw}, only known when it runs, in a command that names {match.group(1)}"
        return None

    # ------------------------------------------------------------ per command

    def _rm(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        flags, targets = _split_options(words[1:])
        if "--no-preserve-root" in flags:
            return "rm --no-preserve-root can delete the whole filesystem"
        for target in targets:
            broad = self._broad(target)
            if broad:
                shown = " ".join(f for f in flags if f.startswith("-"))
                return f"rm {shown + ' ' if shown else ''}{target.raw} deletes {broad}"
        return None

    def _find(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        if not {"-delete", "-exec", "-execdir", "-ok", "-okdir"} & set(argv):
            return None
        for word in words[1:]:
            if word.value.startswith(("-", "(", "!")):
                break
            broad = self._broad(word)
            if broad and not broad.endswith("the working directory"):  # find . -name '*.pyc' -delete is routine
                return f"find {word.raw} deletes or runs commands on {broad}"
        return None

    def _dd(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        target = next((a[3:] for a in argv[1:] if a.startswith("of=")), None)
        return f"dd writes raw data to {target}" if target is not None else None

    def _chmod(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        flags, operands = _split_options(words[1:])
        recursive = any(f in ("-R", "--recursive") or (not f.startswith("--") and "R" in f) for f in flags)
        if not recursive or not operands:
            return None
        mode = operands[0].value
        if _world_writable(mode):
            where = " ".join(w.raw for w in operands[1:]) or "the targets"
            return f"chmod -R {mode} makes everything under {where} writable by everyone"
        for target in operands[1:]:
            broad = self._broad(target)
            if broad:
                return f"chmod -R on {target.raw} changes the permissions of {broad}"
        return None

    def _chown(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        flags, operands = _split_options(words[1:])
        if not any(f in ("-R", "--recursive") or (not f.startswith("--") and "R" in f) for f in flags):
            return None
        for target in operands[1:]:
            broad = self._broad(target)
            if broad:
                return f"{argv[0]} -R on {target.raw} changes the owner of {broad}"
        return None

    def _git(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        config: list[str] = []
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            arg = argv[i]
            if arg.startswith("--exec-path="):
                return f"git {arg} runs git's commands from another folder"
            if arg in ("-c", "--config-env") and i + 1 < len(argv):
                config.append(argv[i + 1])
            elif arg.startswith(("-c", "--config-env=")) and arg != "-c":
                config.append(arg.split("=", 1)[1] if arg.startswith("--") else arg[2:])
            i += 2 if arg in _GIT_VALUE_OPTIONS else 1
        for setting in config:
            key = setting.split("=", 1)[0]
            if _GIT_EXEC_KEYS.fullmatch(key):
                return f"git -c {key} makes git run a command of its choosing"
        subcommand = argv[i] if i < len(argv) else ""
        rest = argv[i + 1 :]
        if subcommand == "config":
            key = next((a for a in rest if _GIT_EXEC_KEYS.fullmatch(a.split("=", 1)[0])), None)
            if key is not None:
                return f"git config {key} makes git run a command of its choosing"
            return None
        if subcommand != "push":
            return None
        for arg in rest:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            forced = (name.startswith("--") and len(name) > 2 and any(o.startswith(name) for o in _GIT_FORCE)) or (
                arg.startswith("-") and not arg.startswith("--") and "f" in arg
            )
            if forced or (arg.startswith("+") and len(arg) > 1):
                return f"git push {arg} rewrites history on the remote"
        return None

    def _kill(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        args = argv[1:]
        i = 0
        if args and args[0] in ("-s", "-n", "--signal"):
            i = 2
        elif args and args[0] in ("-l", "-L", "--list", "--table"):
            return None
        elif args and args[0].startswith("-") and args[0] != "--":
            i = 1
        for k, pid in enumerate(args[i:], start=i + 1):
            if pid == "--":
                continue
            if k < len(words) and words[k].expands:
                # `kill $PID` / `kill $(pgrep x)`: the target is only known when it runs (-1 is a value too).
                return f"kill {words[k].raw} signals a process chosen only when the command runs"
            if pid == "-1":
                return "kill -1 signals every process it is allowed to"
            if re.fullmatch(r"-\d+", pid):
                return f"kill {pid} signals the whole process group {pid[1:]}"
            if pid in ("0", "1"):
                return f"kill {pid} signals {'its own process group' if pid == '0' else 'init (pid 1)'}"
        return None

    def _pkill(self, argv: list[str], words: tuple[Word, ...]) -> str | None:
        name = _base(argv[0])
        if name == "killall5":
            return "killall5 signals every process"
        takes_value = {"-s", "--signal", "-u", "-U", "-g", "-G", "-P", "-t", "--euid", "--uid", "--group", "--pgroup",
                       "--parent", "--session", "--terminal", "-F", "--pidfile", "--ns", "--nslist", "--user",
                       "-o", "--older-than", "-y", "--younger-than", "-n"}
        if name == "pkill":
            takes_value.add("-s")
        expanding = next((w for w in words[1:] if w.expands and not w.value.startswith("-")), None)
        if expanding is not None:
            return f"{name} {expanding.raw} signals processes chosen only when the command runs"
        patterns, regex, args = [], name == "pkill", argv[1:]
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in takes_value:
                i += 2
                continue
            if arg in ("-r", "--regexp"):
                regex = True
            elif not arg.startswith("-") or arg == "-":
                patterns.append(arg)
            i += 1
        if not patterns:
            return f"{name} with no process name signals every process its options select"
        for pattern in patterns:
            try:
                compiled = re.compile(pattern) if regex else None
            except re.error:
                return f"{name} {pattern} is a pattern that cannot be checked"
            hit = next(
                (p for p in _VITAL_PROCESSES if (compiled.search(p) if compiled else pattern == p)), None
            )
            if hit:
                return f"{name} {pattern} also signals {hit} processes, including the ones running this session"
        return None

    # ------------------------------------------------------------ shared checks

    def _download_into_shell(self, stages: list[list[CommandPart]]) -> str | None:
        downloaded = None
        for i, stage in enumerate(stages):
            names = [_command_name(p) for p in stage]
            if downloaded and any(n in INTERPRETERS for n in names):
                shell = next(n for n in names if n in INTERPRETERS)
                return f"pipes downloaded content into {shell} ({downloaded} … | {shell})"
            if i and any(_runs_stdin_script(p) for p in stage):
                shell = next(_command_name(p) for p in stage if _runs_stdin_script(p))
                return f"pipes a script into {shell}, so what it runs cannot be checked"
            downloaded = downloaded or next((n for n in names if n in DOWNLOADERS), None)
        return None

    def _write_targets(self, name: str, argv: list[str], words: tuple[Word, ...]) -> list[Word]:
        args = list(words[1:])
        operands = [w for w in args if not w.value.startswith("-")]
        if name in _WRITES_OPERANDS:
            return operands
        if name in _WRITES_DESTINATION:
            for i, arg in enumerate(args):
                if arg.value in ("-t", "--target-directory") and i + 1 < len(args):
                    return [args[i + 1]]
                if arg.value.startswith("--target-directory="):
                    return [Word(arg.value.split("=", 1)[1], arg.raw.split("=", 1)[-1], arg.expands)]
            return operands[-1:]
        if name in ("sed", "gsed", "perl", "ruby") and any(
            a.value == "--in-place" or a.value.startswith("--in-place=") or re.match(r"-[a-zA-Z]*i", a.value)
            for a in args
        ):
            return operands
        if name in ("curl", "wget"):
            return [
                args[i + 1] for i, a in enumerate(args[:-1])
                if a.value in ("-o", "--output", "-O", "--output-document")
            ]
        return []

    def write_target(self, target: str) -> str | None:
        path = self._expand_home(target)
        if not path:
            return None
        if path.startswith("/dev/") and not _SAFE_DEVICES.match(path):
            return f"writes to the device {target}"
        if not path.startswith("/") and self.unknown_cwd:
            return f"writes to {target} after a cd to a folder only known when it runs"
        candidates = {path}
        for base in self.cwds:
            try:
                candidates.add(posixpath.normpath(posixpath.join(base, path)))
                candidates.add(os.path.realpath(os.path.join(base, path)))
            except (OSError, ValueError):
                pass
        for candidate in candidates:
            reason = _protected(candidate, target, self.home, self.settings_dirs)
            if reason:
                return reason
        return None

    def _broad(self, word: Word) -> str | None:
        """What deleting `word` would take, when that is a root, a home or a parent folder."""
        value = word.value
        if word.expands and not value.startswith(("$HOME", "${HOME}")):
            rest = _LEADING_EXPANSION.sub("", value)
            if rest != value and (rest == "" or rest.startswith("/")) and not rest.strip("/*."):
                return f"whatever {word.raw} expands to (the root folder when it is empty)"
            return None
        if value.startswith(("~+", "~-")):
            if value.startswith("~-") or not static(word):
                return f"whatever {word.raw} is (it depends on an earlier cd)"
            value = "." + value[2:]
        elif value.startswith("~") and not value.startswith("~/") and value != "~":
            user, _, rest = value.partition("/")
            return f"the home folder {user}" if not rest.strip("/*.") else None
        path = self._expand_home(value)
        if not path.startswith("/") and self.unknown_cwd:
            return f"{word.raw} in a folder only known when it runs (after cd)"
        head, tail = posixpath.split(path.rstrip("/") or "/")
        glob = bool(_GLOB_ONLY.fullmatch(tail)) and tail not in (".", "..")
        what = self._root_name(head if glob else path)
        if what is None:
            return None
        return f"everything in {what}" if glob else what

    def _root_name(self, path: str) -> str | None:
        if not path.startswith("/"):
            relative = posixpath.normpath(path or ".")
            if relative == ".":
                return "the working directory"
            if set(relative.split("/")) == {".."}:
                return f"a parent of the working directory ({path})"
        project = str(self.cwd)
        for base in self.cwds:
            # `//` is `/` to the kernel (posixpath keeps it apart)
            absolute = "/" + posixpath.normpath(posixpath.join(base, path or ".")).lstrip("/")
            if absolute == "/":
                return "the whole filesystem (/)"
            if absolute == self.home:
                return "your home folder"
            if self.home.startswith(absolute + "/"):
                return f"{absolute}, which holds your home folder"
            if absolute == project:
                return f"the project folder {absolute}"
            if project.startswith(absolute + "/"):
                return f"{absolute}, which holds the project"
            if absolute.count("/") == 1:
                return f"the system folder {absolute}"
        return None

    def _expand_home(self, value: str) -> str:
        for prefix in ("${HOME}", "$HOME"):
            if value == prefix or value.startswith(prefix + "/"):
                return self.home + value[len(prefix) :]
        if value == "~" or value.startswith("~/"):
            return self.home + value[1:]
        return value


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _command_name(part: CommandPart) -> str:
    """The program a part runs, after wrappers: `sudo -E bash` -> "bash"."""
    argv, _ = unwrap(part.argv)
    return _base(argv[0]) if argv else ""


def _runs_stdin_script(part: CommandPart) -> bool:
    """A shell or interpreter reading its script from stdin: `… | sh`, `… | bash -s arg`, `… | python3`."""
    argv, _ = unwrap(part.argv)
    if not argv:
        return False
    name = _base(argv[0])
    if _PYTHON.fullmatch(name) or name in _INLINE_CODE:
        operands = [a for a in argv[1:] if not a.startswith("-")]
        return not operands or "-" in argv[1:]
    if name not in SHELLS:
        return False
    options = [a for a in argv[1:] if a.startswith("-")]
    operands = [a for a in argv[1:] if not a.startswith("-")]
    return not operands or any(not o.startswith("--") and "s" in o[1:] for o in options)


_CHECKS = {
    "rm": _Danger._rm, "find": _Danger._find, "dd": _Danger._dd, "chmod": _Danger._chmod,
    "chown": _Danger._chown, "chgrp": _Danger._chown, "git": _Danger._git, "kill": _Danger._kill,
    "pkill": _Danger._pkill, "killall": _Danger._pkill, "killall5": _Danger._pkill,
}
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--namespace", "--git-dir", "--work-tree", "--config-env", "--exec-path"})
# git accepts any unambiguous prefix of a long option: `--force-w` is --force-with-lease.
_GIT_FORCE = ("--force", "--force-with-lease", "--mirror")


def _protected(candidate: str, target: str, home: str, settings_dirs: list[str]) -> str | None:
    """Why a write to the absolute path `candidate` could change what later runs, or None."""
    parts = [p for p in candidate.split("/") if p]
    if not parts:
        return None
    if (
        parts[-1] in SHELL_STARTUP_FILES
        or parts[-1] == "config.fish" and "fish" in parts
        or candidate.startswith(("/etc/profile", "/etc/bash.bashrc", "/etc/zsh", "/etc/environment"))
    ):
        return f"writes to a shell startup file ({target})"
    if ".git" in parts:
        return f"modifies git internals ({target})"
    if parts[-1] == ".gitconfig" or "/.config/git/" in candidate + "/":
        return f"changes git's global configuration, which can run commands ({target})"
    if ".agent-tui" in parts or (len(parts) >= 2 and parts[-2] == "agent-tui" and parts[-1].endswith(".json")):
        return f"changes agent-tui's own settings, which hold permission rules and hooks ({target})"
    if any(candidate == d or candidate.startswith(d + "/") for d in settings_dirs):
        return f"changes agent-tui's own files, its settings (permission rules, hooks) and code it runs ({target})"
    reason = project_reason(parts, target)
    if reason:
        return reason
    if ".ssh" in parts:
        return f"changes SSH keys or configuration ({target})"
    return None


def _reads_only(part: CommandPart) -> bool:
    from .classify import is_read_only_part  # classify imports nothing from here

    return is_read_only_part(part, known_paths=False)


def _inline_code(name: str, argv: list[str], part: CommandPart) -> str | None:
    """An interpreter given its program in an argument or on stdin: nothing in it can be checked."""
    if _PYTHON.fullmatch(name):
        letters = "c"
    elif name in _INLINE_CODE:
        letters = _INLINE_CODE[name]
    elif name == "deno" and argv[1:2] == ["eval"]:
        return "deno eval runs code given on the command line, which cannot be checked"
    else:
        return None
    script = False
    for arg in argv[1:]:
        if arg in ("--eval", "--print", "--command") or arg.startswith(("--eval=", "--print=")):
            return f"{name} {arg} runs code given on the command line, which cannot be checked"
        if arg == "-":
            script = False
            break
        if arg.startswith("-") and not arg.startswith("--"):
            if set(arg[1:]) & set(letters) and not (name.startswith(("python", "pypy")) and arg[1:2] in "XWQm"):
                return f"{name} {arg} runs code given on the command line, which cannot be checked"
            if name.startswith(("python", "pypy")) and arg in ("-m",):
                script = True
                break
            continue
        if not arg.startswith("-"):
            script = True
            break
    if not script and any(r.op in ("<<", "<<-", "<<<", "<") for r in part.redirects):
        return f"{name} reads its program from a here-document or file on stdin, which cannot be checked"
    return None



def _split_options(words: tuple[Word, ...]) -> tuple[list[str], list[Word]]:
    flags: list[str] = []
    operands: list[Word] = []
    dashdash = False
    for word in words:
        if not dashdash and word.value == "--":
            dashdash = True
        elif not dashdash and word.value.startswith("-") and len(word.value) > 1 and not word.expands:
            flags.append(word.value)
        else:
            operands.append(word)
    return flags, operands


def _world_writable(mode: str) -> bool:
    """777, 0666, a+w, o=rwx, +w: the "other" class may write."""
    if re.fullmatch(r"[0-7]{3,4}", mode):
        return bool(int(mode[-1]) & 2)
    for clause in mode.split(","):
        m = re.fullmatch(r"([ugoa]*)[+=]([rwxXst]*)", clause)
        if m and "w" in m.group(2) and (not m.group(1) or "a" in m.group(1) or "o" in m.group(1)):
            return True
    return False
