"""Classify shell commands as read-only, from a bashlex parse tree.

`is_read_only_command` decides whether a Bash call may run in parallel with
other tools without asking; `split_command` yields the simple commands a
compound command runs, for the permission engine.  Both fail closed: anything
the parser does not understand, any assignment, unknown command, output
redirection or substitution that is not itself read-only makes the whole
command not read-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


_LIST_OPERATORS = {"&&", "||", ";", "\n"}
_OUTPUT_REDIRECTS = {">", ">>", ">|", "&>", "&>>", ">&", "<>"}
_INPUT_REDIRECTS = {"<", "<<", "<<-", "<<<", "<&"}
_SYNTAX_WORDS = {
    "(", ")", "{", "}", "!", ";", "\n",
    "if", "then", "elif", "else", "fi",
    "for", "in", "while", "until", "do", "done",
}
# Text in a word that bash expands but bashlex leaves unparsed.
_UNPARSED_EXPANSION = re.compile(r"\$\(|`|[<>]\(")
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_EXPANDS = re.compile(r"[*?\[{$`]")


def split_command(command: str) -> list[str]:
    """The simple commands in `command`, including those inside substitutions.

    When the command does not parse, the whole command is the only part, so a
    caller that checks every part still sees it.
    """
    trees = _parse(command)
    if trees is None:
        stripped = command.strip()
        return [stripped] if stripped else []
    return [command[node.pos[0] : node.pos[1]] for node in _walk(trees) if node.kind == "command"]


def is_read_only_command(command: str) -> bool:
    """True when every part of `command` only reads (see the module docstring)."""
    trees = _parse(command)
    if not trees:
        return False
    return all(_Checker(command).safe(tree) for tree in trees)


def _parse(command: str) -> list[Any] | None:
    if not command.strip():
        return []
    import bashlex  # builds its parser tables on import (~80 ms): only when a command is classified

    try:
        return list(bashlex.parse(command))
    except Exception:  # bashlex raises several unrelated types for unsupported syntax
        return None


def _children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list", "redirects"):
        yield from getattr(node, attr, None) or []
    for attr in ("command", "output", "heredoc"):
        child = getattr(node, attr, None)
        if hasattr(child, "kind"):
            yield child


def _walk(nodes: list[Any]) -> Iterator[Any]:
    for node in nodes:
        yield node
        yield from _walk(list(_children(node)))


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source

    def safe(self, node: Any) -> bool:
        kind = node.kind
        if kind in ("list", "pipeline", "compound", "if", "for", "while", "until"):
            return all(self.safe(child) for child in _children(node))
        if kind == "operator":
            return node.op in _LIST_OPERATORS
        if kind == "pipe":
            return True
        if kind == "reservedword":
            return node.word in _SYNTAX_WORDS
        if kind == "word":
            return self._word_safe(node)
        if kind == "redirect":
            return self._redirect_safe(node)
        if kind == "command":
            return self._command_safe(node)
        # assignments, functions, anything new: fail closed
        return False

    def _word_safe(self, word: Any) -> bool:
        for part in getattr(word, "parts", None) or []:
            if part.kind in ("commandsubstitution", "processsubstitution"):
                if not self.safe(part.command):
                    return False
            elif part.kind == "parameter":
                if _UNPARSED_EXPANSION.search(part.value):
                    return False
            elif part.kind != "tilde":
                return False
        return True

    def _redirect_safe(self, redirect: Any) -> bool:
        target = redirect.output
        if redirect.type in _OUTPUT_REDIRECTS:
            if isinstance(target, int):  # fd duplication such as 2>&1
                return True
            return (
                getattr(target, "kind", None) == "word"
                and target.word == "/dev/null"
                and not getattr(target, "parts", None)
            )
        if redirect.type in _INPUT_REDIRECTS:
            heredoc = getattr(redirect, "heredoc", None)
            if heredoc is not None and _UNPARSED_EXPANSION.search(heredoc.value):
                return False
            return not hasattr(target, "kind") or self.safe(target)
        return False

    def _command_safe(self, command: Any) -> bool:
        words: list[Any] = []
        for part in command.parts:
            if part.kind == "word":
                if not self._word_safe(part):
                    return False
                words.append(part)
            elif part.kind == "redirect":
                if not self._redirect_safe(part):
                    return False
            else:
                return False
        if not words or getattr(words[0], "parts", None):
            return False
        rule = _RULES.get(words[0].word)
        if rule is None:
            return False
        args = words[1:]
        if rule is not _any_args and any(self._expands(arg) for arg in args):
            # an expansion could produce a flag the rule below would refuse
            return False
        return rule([arg.word for arg in args])

    def _expands(self, word: Any) -> bool:
        if getattr(word, "parts", None):
            return True
        raw = self.source[word.pos[0] : word.pos[1]]
        return bool(_EXPANDS.search(_QUOTED.sub("", raw)))


# --- per-command rules: they receive the arguments after the command name ---


def _any_args(args: list[str]) -> bool:
    return True


def _short_flags(arg: str) -> str:
    """The letters of a short option cluster ("-la" -> "la"), else ""."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1 else ""


def _long_name(arg: str) -> str:
    return arg.split("=", 1)[0] if arg.startswith("--") else ""


def _refuse(short: str = "", long: tuple[str, ...] = ()) -> Callable[[list[str]], bool]:
    """A rule refusing any short flag letter in `short` and any long option in `long`."""

    def rule(args: list[str]) -> bool:
        for arg in args:
            if arg == "--":
                break
            if set(_short_flags(arg)) & set(short) or _long_name(arg) in long:
                return False
        return True

    return rule


def _find(args: list[str]) -> bool:
    return not any(
        arg in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls") or arg.startswith("-fprint")
        for arg in args
    )


def _date(args: list[str]) -> bool:
    # date MMDDhhmm or -s sets the clock
    return _refuse("s", ("--set",))(args) and all(a.startswith(("-", "+")) for a in args)


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


def _env(args: list[str]) -> bool:
    # with a command (or -S) env runs it
    return all(a in ("-0", "--null") for a in args)


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

_GIT_SUBCOMMANDS: dict[str, Callable[[list[str]], bool]] = {
    "status": _any_args,
    "log": _refuse(long=("--output",)),
    "diff": _refuse(long=("--output",)),
    "show": _refuse(long=("--output",)),
    "rev-parse": _any_args,
    "ls-files": _any_args,
    "blame": _any_args,
    "branch": _git_listing("arlvi", _GIT_LISTING_LONG),
    "tag": _git_listing("lni", _GIT_LISTING_LONG - {"--all", "--remotes", "--verbose", "--show-current"}),
    "remote": lambda args: all(a in ("-v", "--verbose") for a in args),
}


def _git(args: list[str]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-C":
            i += 2
        elif arg in ("--no-pager", "-P", "--no-optional-locks") or _long_name(arg) in ("--git-dir", "--work-tree"):
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
            "cmp", "basename", "dirname", "realpath", "readlink", "printenv", "whoami", "id",
            "uname", "test", "[", "cd",
        )
    },
    "rg": _refuse(long=("--pre",)),
    "find": _find,
    "sort": _refuse("o", ("--output", "--compress-program")),
    "tree": _refuse("oR", ("--output",)),
    "file": _refuse("C", ("--compile",)),
    "date": _date,
    "uniq": _uniq,
    "hostname": _hostname,
    "env": _env,
    "git": _git,
}
