"""Classify shell commands as read-only, from the bashlex-based model in `parse`.

`is_read_only_command` decides whether a Bash call may run in parallel with
other tools without asking; `split_command` yields the simple commands a
compound command runs; `parts_pass` walks a parsed command and asks a
predicate about each simple command, for the permission engine (every part
must pass).  All fail closed: anything the parser does not understand, any
assignment, unknown command, output redirection, function definition or
substitution that does not itself pass makes the whole command fail.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .parse import CommandPart, ParsedCommand, children, parse_command, unwrap
from .paths import static

_LIST_OPERATORS = {"&&", "||", ";", "\n"}
_INPUT_REDIRECTS = {"<", "<<", "<<-", "<<<", "<&"}
_SYNTAX_WORDS = {
    "(", ")", "{", "}", "!", ";", "\n",
    "if", "then", "elif", "else", "fi",
    "for", "in", "while", "until", "do", "done",
}
# Text in a here-document body that bash expands when the delimiter is unquoted.
_BODY_EXPANSION = re.compile(r"\$\(|`|[<>]\(")
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_GLOBS = re.compile(r"[*?\[]")


def split_command(command: str) -> list[str]:
    """The simple commands in `command`, including those inside substitutions.

    When the command does not parse, the whole command is the only part, so a
    caller that checks every part still sees it.
    """
    parsed = parse_command(command)
    if parsed is None:
        stripped = command.strip()
        return [stripped] if stripped else []
    return [part.text for part in parsed.parts]


def is_read_only_command(command: str) -> bool:
    """True when every part of `command` only reads (see the module docstring)."""
    parsed = parse_command(command)
    return parsed is not None and bool(parsed.trees) and parts_pass(parsed, is_read_only_part)


def parts_pass(parsed: ParsedCommand, part_ok: Callable[[CommandPart], bool], *, background: bool = False) -> bool:
    """True when the structure of `parsed` is plain and `part_ok` holds for every simple command.

    Structure that fails: output redirection of a compound command (other than
    to /dev/null), function definitions, code hidden from the parse
    (`ParsedCommand.hidden`), and `&` unless `background`.  The scripts a part
    runs itself (`sh -c '…'`) must pass too.
    """
    if parsed.hidden:
        return False
    walker = _Walker(parsed, part_ok, background)
    return all(walker.safe(tree) for tree in parsed.trees) and all(
        parts_pass(inner, part_ok, background=background) for inner in parsed.nested
    )


def is_read_only_part(part: CommandPart, *, known_paths: bool = True) -> bool:
    """One simple command only reads (the commands in its substitutions are parts of their own).

    `known_paths=False` asks only whether the program and its options read,
    whatever its words expand to.
    """
    if part.assignments or not part.words:
        return False
    name = part.words[0]
    if not static(name):
        return False
    for redirect in part.redirects:
        if redirect.op in _INPUT_REDIRECTS:
            if redirect.body is not None and not redirect.quoted and _BODY_EXPANSION.search(redirect.body):
                return False
            if known_paths and redirect.body is None and redirect.target is not None and not static(redirect.target):
                return False
        elif redirect.target is not None and not (
            redirect.target.value == "/dev/null" and redirect.target.raw == "/dev/null"
        ):
            return False
    rule = _RULES.get(name.value)
    if rule is None:
        return False
    args = part.words[1:]
    # Every path must be known before it runs: `$HOME`, `$(…)`, `{..,.}`, `~+` are not.
    if known_paths and not all(static(arg) for arg in args):
        return False
    if name.value in _NO_GLOBS and any(_GLOBS.match(_QUOTED.sub("", arg.raw)) for arg in args):
        # a glob at the start of a word could match a file named like a flag the rule refuses (`--pre=sh`)
        return False
    return rule([arg.value for arg in args])


def read_paths(part: CommandPart) -> list[str]:
    """Every path a read-only part may read, as written: operands, option values, input redirections.

    Over-approximates: a value that is not a path (a pattern, a count, a
    revision) resolves inside the working directory and costs nothing.
    """
    if not part.words:
        return []
    paths = [r.target.value for r in part.redirects if r.op in ("<", "<>") and r.target is not None]
    if part.name in _NO_PATH_ARGS:
        return paths
    args = list(part.argv[1:])
    operands: list[str] = []
    after_dashdash = False
    for arg in args:
        if after_dashdash or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            after_dashdash = True
        elif arg.startswith("--") and "=" in arg:
            operands.append(arg.split("=", 1)[1])
        else:
            operands += attached_values(arg)  # `-f../secret`, `-nflink_out`
    if part.name == "find":
        operands = []
        for arg in args:
            if arg.startswith(("-", "(", "!")):
                break
            operands.append(arg)
    elif part.name in _PATTERN_FIRST and not any(
        a.startswith(("--regexp", "--file")) or set(_short_flags(a)) & {"e", "f"} for a in args
    ):
        operands = operands[1:]
    return paths + [o for o in operands if o and o != "-"]


class _Walker:
    def __init__(self, parsed: ParsedCommand, part_ok: Callable[[CommandPart], bool], background: bool) -> None:
        self.parsed = parsed
        self.part_ok = part_ok
        self.operators = _LIST_OPERATORS | ({"&"} if background else set())

    def safe(self, node: Any) -> bool:
        kind = node.kind
        if kind in ("list", "pipeline", "compound", "if", "for", "while", "until"):
            return all(self.safe(child) for child in children(node))
        if kind == "operator":
            return node.op in self.operators
        if kind == "pipe":
            return True
        if kind == "reservedword":
            return node.word in _SYNTAX_WORDS
        if kind == "word":
            return self._word_safe(node)
        if kind == "redirect":
            return self._redirect_safe(node)
        if kind == "command":
            return self.part_ok(self.parsed.part_for(node)) and all(
                self._word_safe(child) if child.kind in ("word", "assignment") else self._target_safe(child)
                for child in node.parts
            )
        # functions, anything new: fail closed
        return False

    def _word_safe(self, word: Any) -> bool:
        return all(
            self.safe(part.command)
            for part in getattr(word, "parts", None) or []
            if part.kind in ("commandsubstitution", "processsubstitution")
        )

    def _target_safe(self, redirect: Any) -> bool:
        target = redirect.output
        return not hasattr(target, "kind") or self._word_safe(target)

    def _redirect_safe(self, redirect: Any) -> bool:
        """A redirection of a compound command: `(ls) > f` writes whatever the parts are."""
        target = redirect.output
        if redirect.type in _INPUT_REDIRECTS:
            heredoc = getattr(redirect, "heredoc", None)
            if heredoc is not None and _BODY_EXPANSION.search(heredoc.value):
                return False
            return self._target_safe(redirect)
        if isinstance(target, int):  # fd duplication such as 2>&1
            return True
        return getattr(target, "kind", None) == "word" and target.word == "/dev/null" and not target.parts


# --- per-command rules: they receive the arguments after the command name ---


def _any_args(args: list[str]) -> bool:
    return True


def attached_values(arg: str) -> list[str]:
    """What a cluster of short options may carry as a value attached to one of its letters
    (`-flink_out`, `-nf../secret`): every tail after its first letter, since which letter takes
    a value depends on the program.  Over-approximates, like `read_paths`: a tail that is not a
    path resolves inside the working directory."""
    if not arg.startswith("-") or arg.startswith("--"):
        return []
    return [arg[k:] for k in range(2, len(arg))]


def _short_flags(arg: str) -> str:
    """The letters of a short option cluster ("-la" -> "la"), else ""."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1 else ""


def _long_name(arg: str) -> str:
    return arg.split("=", 1)[0] if arg.startswith("--") else ""


def _abbreviates(name: str, options: tuple[str, ...] | frozenset[str] | set[str]) -> bool:
    """GNU and git accept any unambiguous prefix of a long option: `--out` is `--output`."""
    return len(name) > 2 and any(option.startswith(name) for option in options)


def _refuse(short: str = "", long: tuple[str, ...] = ()) -> Callable[[list[str]], bool]:
    """A rule refusing any short flag letter in `short` and any long option in `long`, however abbreviated."""

    def rule(args: list[str]) -> bool:
        for arg in args:
            if arg == "--":
                break
            if set(_short_flags(arg)) & set(short) or _abbreviates(_long_name(arg), long):
                return False
        return True

    return rule


def _find(args: list[str]) -> bool:
    # -L / -follow walk through symlinks to anywhere; -files0-from reads a list of start points
    return not any(
        arg in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-L", "-follow", "-files0-from")
        or arg.startswith("-fprint")
        for arg in args
    )


def _date(args: list[str]) -> bool:
    # date MMDDhhmm or -s sets the clock; -f and -r read a file
    return _refuse("sfr", ("--set", "--file", "--reference"))(args) and all(a.startswith(("-", "+")) for a in args)


def _uniq(args: list[str]) -> bool:
    # a second operand is an output file
    operands = 0
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif arg in ("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"):
            takes_value = True
        elif arg == "-" or not arg.startswith("-"):
            operands += 1
    return operands <= 1


def _hostname(args: list[str]) -> bool:
    return all(a.startswith("-") for a in args) and _refuse("Fb", ("--file", "--boot"))(args)


_GIT_VALUE_OPTIONS = {
    "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format",
}


def _git_listing(short_ok: str, long_ok: set[str]) -> Callable[[list[str]], bool]:
    """`git branch` / `git tag` without arguments that create, move or delete."""

    def rule(args: list[str]) -> bool:
        listing = False
        operands = False
        takes_value = False
        for arg in args:
            if takes_value:
                takes_value = False
            elif arg.startswith("--"):
                name = _long_name(arg)
                if name not in long_ok:
                    return False
                listing |= name == "--list"
                takes_value = name in _GIT_VALUE_OPTIONS and "=" not in arg
            elif arg.startswith("-") and len(arg) > 1:
                letters = re.sub(r"n\d*", "", arg[1:]) if "n" in short_ok else arg[1:]
                if not set(letters) <= set(short_ok):
                    return False
                listing |= "l" in letters
            else:
                operands = True
        return listing or not operands

    return rule


_GIT_LISTING_LONG = {
    "--list", "--all", "--remotes", "--verbose", "--show-current", "--color", "--no-color",
    "--column", "--no-column", "--abbrev", "--no-abbrev", "--ignore-case", "--omit-empty",
} | _GIT_VALUE_OPTIONS

# --no-index reads any two files; --output writes one.
_GIT_DIFF = _refuse(long=("--output", "--no-index"))
_GIT_SUBCOMMANDS: dict[str, Callable[[list[str]], bool]] = {
    "status": _any_args,
    "log": _GIT_DIFF,
    "diff": _GIT_DIFF,
    "show": _GIT_DIFF,
    "rev-parse": _any_args,
    "ls-files": _any_args,
    "blame": _any_args,
    "branch": _git_listing("arlvi", _GIT_LISTING_LONG),
    "tag": _git_listing("lni", _GIT_LISTING_LONG - {"--all", "--remotes", "--verbose", "--show-current"}),
    "remote": lambda args: all(a in ("-v", "--verbose") for a in args),
}


def _git(args: list[str]) -> bool:
    """A git command that only reads, in the session's own repository.

    `-C`, `--git-dir`, `--work-tree`, `-c`, `--config-env`, `--exec-path` and friends point git at
    another repository or configuration, whose `core.fsmonitor`, pager or hooks git would run:
    they are never read-only (the policy also asks when the repository git would discover from
    the working directory is not the project's own)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        else:
            break
    if i >= len(args):
        return False
    rule = _GIT_SUBCOMMANDS.get(args[i])
    return rule is not None and rule(args[i + 1 :])


_RULES: dict[str, Callable[[list[str]], bool]] = {
    **{
        name: _any_args
        for name in (
            "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "echo", "printf", "pwd",
            "sleep", "true", "false", "which", "type", "stat", "du", "df", "cut", "tr", "diff",
            "cmp", "basename", "dirname", "realpath", "readlink", "whoami", "id", "uname", "test", "[",
        )
    },
    # -R / --dereference-recursive and --follow read through symlinks to anywhere.
    **{name: _refuse("R", ("--dereference-recursive",)) for name in ("grep", "egrep", "fgrep")},
    "rg": _refuse("L", ("--pre", "--follow")),
    "find": _find,
    "sort": _refuse("oT", ("--output", "--compress-program", "--files0-from", "--temporary-directory")),
    "tree": _refuse("oRl", ("--output", "--fromfile")),
    "file": _refuse("Cf", ("--compile", "--files-from")),
    "wc": _refuse(long=("--files0-from",)),
    "du": _refuse("LX", ("--files0-from", "--dereference", "--exclude-from")),
    "date": _date,
    "uniq": _uniq,
    "hostname": _hostname,
    "git": _git,
}

# Read-only commands whose operands are not files they read.
_NO_PATH_ARGS = frozenset({
    "echo", "printf", "pwd", "sleep", "true", "false", "which", "type", "whoami", "id", "uname", "date",
    "hostname", "basename", "dirname", "tr", "df",
})
# Commands with options that write or run something: a glob could match a file named like one.
_NO_GLOBS = frozenset({"sort", "tree", "find", "date", "git", "rg", "file", "hostname", "uniq"})
# Their first operand is a pattern, unless -e/-f gives it.
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg"})


def runs_git(part: CommandPart) -> bool:
    """Whether `part` runs git (after wrappers such as `env` or `timeout`)."""
    argv = unwrap(part.argv)[0]
    return bool(argv) and posixpath.basename(argv[0]) == "git"


def foreign_repository(cwd: Path | str) -> bool:
    """Whether git, started in `cwd`, would use a repository other than the project's own.

    Git looks in each folder from `cwd` up for a `.git`, and treats a folder that itself holds
    `HEAD`, `objects/` and `refs/` as a (bare) repository: a checked-in folder shaped like that is
    someone else's configuration (its `core.fsmonitor` runs on `git status`)."""
    folder = Path(cwd)
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return False
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir() and (candidate / "refs").is_dir():
            return True
    return False
