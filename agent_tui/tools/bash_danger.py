"""Dangerous shell forms: the commands that always ask, with the reason the prompt shows.

`danger_reason(command)` looks at every simple command (including those in
substitutions and in the scripts a command runs, after wrappers such as
`timeout`, `env` or `xargs`), every pipeline and every function definition:
rm of a broad target, `dd of=`, mkfs, fork bombs, downloads piped into a
shell, `chmod -R 777`, writes to shell startup files, git internals or
agent-tui's settings, force pushes, sudo, and code hidden from the parse.
A command that does not parse is dangerous too: nothing in it can be checked.
`sensitive_write_reason(path)` is the file-path half, shared with the file tools.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from .bash_parse import SHELLS, CommandPart, ParsedCommand, Word, parse_command, unwrap

ROOT_RUNNERS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
INTERPRETERS = SHELLS | frozenset({
    "python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "deno", "bun", "source", ".", "eval",
})
SHELL_STARTUP_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".kshrc", ".mkshrc", ".inputrc",
})
# Commands whose operands are all written (or removed, or re-permissioned).
_WRITES_OPERANDS = frozenset({
    "rm", "unlink", "shred", "truncate", "touch", "chmod", "chown", "chgrp", "mkdir", "rmdir", "mv", "tee",
})
# Commands that write their last operand (or the -t folder).
_WRITES_DESTINATION = frozenset({"cp", "install", "ln", "rsync", "scp"})
_SAFE_DEVICES = re.compile(r"/dev/(null|zero|stdout|stderr|stdin|tty|fd/\d+|random|urandom)$")
_GLOB_ONLY = re.compile(r"[*?\[\].]*[*?\[][*?\[\].]*")
_LEADING_EXPANSION = re.compile(r"^(?:\$\{[^}]*\}|\$\w+|\$\([^)]*\)|`[^`]*`)+")


def danger_reason(command: str, *, cwd: Path | None = None, home: Path | None = None) -> str | None:
    """Why `command` must be confirmed by a person whatever the mode and rules, or None."""
    parsed = parse_command(command)
    if parsed is None:
        return "the command could not be parsed, so what it runs cannot be checked"
    checker = _Danger(cwd or Path.cwd(), home or Path.home())
    for each in parsed.every_command():
        reason = checker.command(each)
        if reason:
            return reason
    return None


def sensitive_write_reason(path: str, *, cwd: Path | None = None, home: Path | None = None) -> str | None:
    """Why writing `path` needs a person: shell startup files, .git internals, agent-tui settings, devices."""
    return _Danger(cwd or Path.cwd(), home or Path.home()).write_target(path)


class _Danger:
    def __init__(self, cwd: Path, home: Path) -> None:
        self.cwd = cwd
        self.home = str(home)

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
        if parsed.hidden:
            return f"{parsed.hidden[0]}, so it cannot be checked"
        return None

    def part(self, part: CommandPart) -> str | None:
        argv, wrappers = unwrap(part.argv)
        runner = next((w for w in wrappers if w in ROOT_RUNNERS), None)
        if runner or (argv and _base(argv[0]) in ROOT_RUNNERS):
            return f"runs a command as root ({runner or _base(argv[0])})"
        for redirect in part.redirects:
            if redirect.writes:
                reason = self.write_target(redirect.target.value)
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
        if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs"):
            return f"formats a filesystem ({name})"
        check = _CHECKS.get(name)
        if check is not None:
            reason = check(self, argv, words)
            if reason:
                return reason
        for target in self._write_targets(name, argv):
            reason = self.write_target(target)
            if reason:
                return reason
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
        if "-delete" not in argv:
            return None
        for word in words[1:]:
            if word.value.startswith(("-", "(", "!")):
                break
            broad = self._broad(word)
            if broad and not broad.endswith("the working directory"):  # find . -name '*.pyc' -delete is routine
                return f"find {word.raw} -delete deletes {broad}"
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
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in ("-C", "-c", "--namespace", "--git-dir", "--work-tree") else 1
        if i >= len(argv) or argv[i] != "push":
            return None
        for arg in argv[i + 1 :]:
            if arg == "--":
                break
            forced = arg in ("--force", "--mirror") or arg.startswith("--force-with-lease") or (
                arg.startswith("-") and not arg.startswith("--") and "f" in arg
            )
            if forced or (arg.startswith("+") and len(arg) > 1):
                return f"git push {arg} rewrites history on the remote"
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

    def _write_targets(self, name: str, argv: list[str]) -> list[str]:
        args = argv[1:]
        operands = [a for a in args if not a.startswith("-")]
        if name in _WRITES_OPERANDS:
            return operands
        if name in _WRITES_DESTINATION:
            for i, arg in enumerate(args):
                if arg in ("-t", "--target-directory") and i + 1 < len(args):
                    return [args[i + 1]]
                if arg.startswith("--target-directory="):
                    return [arg.split("=", 1)[1]]
            return operands[-1:]
        if name in ("sed", "gsed", "perl", "ruby") and any(
            a == "--in-place" or a.startswith("--in-place=") or re.match(r"-[a-zA-Z]*i", a) for a in args
        ):
            return operands
        if name in ("curl", "wget"):
            return [
                args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "--output", "-O", "--output-document")
            ]
        return []

    def write_target(self, target: str) -> str | None:
        path = self._expand_home(target)
        if not path:
            return None
        if path.startswith("/dev/") and not _SAFE_DEVICES.match(path):
            return f"writes to the device {target}"
        candidates = {path}
        try:
            candidates.add(os.path.realpath(os.path.join(self.cwd, path)))
        except (OSError, ValueError):
            pass
        for candidate in candidates:
            parts = [p for p in candidate.split("/") if p]
            if not parts:
                continue
            if (
                parts[-1] in SHELL_STARTUP_FILES
                or parts[-1] == "config.fish" and "fish" in parts
                or candidate.startswith(("/etc/profile", "/etc/bash.bashrc", "/etc/zsh", "/etc/environment"))
            ):
                return f"writes to a shell startup file ({target})"
            if ".git" in parts:
                return f"modifies git internals ({target})"
            if ".agent-tui" in parts or (len(parts) >= 2 and parts[-2] == "agent-tui" and parts[-1].endswith(".json")):
                return f"changes agent-tui's own settings, which hold permission rules and hooks ({target})"
        return None

    def _broad(self, word: Word) -> str | None:
        """What deleting `word` would take, when that is a root, a home or a parent folder."""
        value = word.value
        if word.expands and not value.startswith(("$HOME", "${HOME}")):
            rest = _LEADING_EXPANSION.sub("", value)
            if rest != value and (rest == "" or rest.startswith("/")) and not rest.strip("/*."):
                return f"whatever {word.raw} expands to (the root folder when it is empty)"
            return None
        if value.startswith("~") and not value.startswith("~/") and value != "~":
            user, _, rest = value.partition("/")
            return f"the home folder {user}" if not rest.strip("/*.") else None
        path = self._expand_home(value)
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
        absolute = posixpath.normpath(posixpath.join(str(self.cwd), path or "."))
        if absolute == "/":
            return "the whole filesystem (/)"
        if absolute == self.home:
            return "your home folder"
        if self.home.startswith(absolute + "/"):
            return f"{absolute}, which holds your home folder"
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
    """A shell reading its script from stdin: `… | sh`, `… | bash -s arg`."""
    argv, _ = unwrap(part.argv)
    if not argv or _base(argv[0]) not in SHELLS:
        return False
    options = [a for a in argv[1:] if a.startswith("-")]
    operands = [a for a in argv[1:] if not a.startswith("-")]
    return not operands or any(not o.startswith("--") and "s" in o[1:] for o in options)


_CHECKS = {
    "rm": _Danger._rm, "find": _Danger._find, "dd": _Danger._dd, "chmod": _Danger._chmod,
    "chown": _Danger._chown, "chgrp": _Danger._chown, "git": _Danger._git,
}


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
