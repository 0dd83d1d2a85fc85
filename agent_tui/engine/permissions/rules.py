"""Permission rule syntax and matching, as in Claude Code's settings.

A rule is `Tool` (every call of the tool) or `Tool(content)`:

- Bash: `Bash(npm test)` is that exact command, `Bash(npm test:*)` the
  command and anything after it, `*` anywhere else matches any text
  (`Bash(git * main)`); a trailing ` *` also matches the bare prefix.
- Read/Edit/Write/MultiEdit/Glob/Grep: gitignore-style paths.  `//abs` from
  the filesystem root, `~/p` from the home folder, `/p` from the settings
  layer's folder (the project root), `./p` and `p` from the working
  directory.  A pattern without a slash matches at any depth (`*.env`), `**`
  spans folders, a match on a folder covers what is inside it, a trailing `/`
  matches folders only.  `Read(…)` rules cover Glob and Grep too, `Edit(…)`
  rules cover MultiEdit and Write.  Patterns and the paths they are tested
  against are both resolved through symlinks and `..` first.
- WebFetch: `WebFetch(domain:example.com)` is every URL on that host, `domain:*.example.com`
  its subdomains.
- `mcp__server` covers every tool of that MCP server; `Tool(*)` is `Tool`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...shell.classify import is_read_only_part, read_paths
from ...shell.danger import INTERPRETERS
from ...shell.parse import BENIGN_WRAPPERS, CommandPart, unwrap, unwrap_steps
from ...tools.globs import glob_literal, glob_to_regex

READ_TOOLS = frozenset({"Read", "Glob", "Grep", "NotebookRead"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
PATH_TOOLS = READ_TOOLS | EDIT_TOOLS
_TOOL_NAME = re.compile(r"[A-Za-z_][\w.-]*\*?")
_GLOB_CHARS = frozenset("*?[")
DOMAIN_PREFIX = "domain:"


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    tool: str
    content: str | None

    @classmethod
    def parse(cls, text: str) -> Rule:
        """`Bash(npm test:*)` -> Rule(tool="Bash", content="npm test:*"); ValueError when malformed."""
        if not isinstance(text, str):
            raise ValueError(f"a rule must be a string, not {type(text).__name__}")
        stripped = text.strip()
        name, paren, rest = stripped.partition("(")
        name = name.strip()
        if not _TOOL_NAME.fullmatch(name):
            raise ValueError(f"{text!r} is not a rule: expected Tool or Tool(content)")
        if not paren:
            return cls(stripped, name, None)
        if not rest.endswith(")"):
            raise ValueError(f"{text!r} is not a rule: missing the closing parenthesis")
        content = rest[:-1].strip()
        return cls(stripped, name, content or None)

    @property
    def whole_tool(self) -> bool:
        return self.content is None or self.content == "*"

    def names_tool(self, tool_name: str) -> bool:
        """The rule is about `tool_name` (exactly, through the Read/Edit families, or an MCP server prefix)."""
        name = self.tool
        if name == tool_name:
            return True
        if name == "Read" and tool_name in READ_TOOLS or name == "Edit" and tool_name in EDIT_TOOLS:
            return True
        if name.startswith("mcp__") and tool_name.startswith("mcp__"):
            server = name[:-1].rstrip("_") if name.endswith("*") else name
            return tool_name.startswith(server + "__") and server.count("__") == 1
        return False


def unknown_tool_problem(rule: Rule, known: Iterable[str]) -> str | None:
    """Why `rule` can never match (it names no tool here), or None.  MCP tools load later,
    so any `mcp__` name passes."""
    names = set(known)
    if rule.tool in names or rule.tool.startswith("mcp__"):
        return None
    close = next((n for n in sorted(names) if n.lower() == rule.tool.lower()), None)
    hint = f" (did you mean {close}?)" if close else ""
    return f"rule {rule.text!r} names no tool {rule.tool!r} and never matches{hint}; tool names are case-sensitive"


def split_rules(text: str) -> list[str]:
    """`Bash(npm test:*), Read` -> ["Bash(npm test:*)", "Read"]: commas and spaces outside parentheses separate."""
    rules: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch in ", " and depth == 0:
            if current.strip():
                rules.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        rules.append(current.strip())
    return rules


# ------------------------------------------------------------ Bash


def bash_matches(content: str, command: str) -> bool:
    """Whether a Bash rule's content matches one command (already split and normalized)."""
    content = " ".join(content.split())
    if content.endswith(":*"):
        prefix = content[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in content:
        if content.endswith(" *") and command == content[:-2].rstrip():
            return True
        return _wildcard(content).fullmatch(command) is not None
    return command == content


@lru_cache(maxsize=512)
def _wildcard(content: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(piece) for piece in content.split("*")), re.DOTALL)


# ------------------------------------------------------------ paths


@dataclass(frozen=True, slots=True)
class PathPattern:
    # The folder the pattern is relative to, resolved.
    root: str
    # The glob, matching a path relative to root when it matches the path or one of its parent
    # folders (`in_or_below`) or one of its parent folders (`below`, for a folder-only rule and a
    # file): one match instead of one per folder of the path, as Glob and Grep ask it for every
    # file they find.  None: root itself and everything in it.
    in_or_below: re.Pattern[str] | None
    below: re.Pattern[str] | None
    dir_only: bool
    # Characters any match holds (a substring test passes over most paths without the regex).
    literal: str = ""

    @classmethod
    def compile(cls, root: str, glob: str | None, dir_only: bool) -> PathPattern:
        if glob is None:
            return cls(root, None, None, dir_only)
        body = glob_to_regex(glob)
        return cls(root, re.compile(f"(?:{body})(?:/[\\s\\S]*)?"), re.compile(f"(?:{body})/[\\s\\S]*"), dir_only,
                   glob_literal(glob))

    def matches(self, path: str, is_dir: bool) -> bool:
        """`path` must already be absolute and resolved."""
        rel = _relative(path, self.root)
        if rel is None or self.literal not in rel:
            return False
        if self.in_or_below is None or self.below is None:
            return bool(rel) or not self.dir_only or is_dir
        if not rel:
            return False
        return bool((self.below if self.dir_only and not is_dir else self.in_or_below).fullmatch(rel))


    def file_regex(self) -> str:
        """A regex that fullmatches the absolute, `/`-separated path of a file this pattern covers
        (`matches(path, False)` as one regex, to join with other rules' into one)."""
        prefix = re.escape(self.root if self.root.endswith("/") else self.root + "/")
        if self.in_or_below is None or self.below is None:
            return f"{prefix}[\\s\\S]+" + ("" if self.dir_only else f"|{re.escape(self.root)}")
        return f"{prefix}(?=[\\s\\S])(?:{(self.below if self.dir_only else self.in_or_below).pattern})"


def path_pattern(content: str, *, base_dir: str, cwd: str, home: str) -> PathPattern:
    """Compile a Read/Edit rule's content (see the module docstring for the anchors)."""
    return _compile_path(content, base_dir, cwd, home)


@lru_cache(maxsize=1024)
def _compile_path(content: str, base_dir: str, cwd: str, home: str) -> PathPattern:
    if content.startswith("//"):
        root, pattern, anchored = "/", content[2:], True
    elif content == "~" or content.startswith("~/"):
        root, pattern, anchored = home, content[2:], True
    elif content.startswith("/"):
        root, pattern, anchored = base_dir, content[1:], True
    elif content.startswith("./"):
        root, pattern, anchored = cwd, content[2:], True
    else:
        root, pattern, anchored = cwd, content, "/" in content.rstrip("/")
    dir_only = pattern.endswith("/")
    pieces = [p for p in pattern.split("/") if p and p != "."]
    literal = 0
    while literal < len(pieces) and not (_GLOB_CHARS & set(pieces[literal])):
        literal += 1
    if anchored and literal:
        # Resolve the literal folders too, so `//tmp/x/**` still matches where /tmp is a symlink.
        root = os.path.join(root, *pieces[:literal])
        pieces = pieces[literal:]
    root = os.path.realpath(root)
    if not pieces:
        return PathPattern.compile(root, None, dir_only)
    glob = "/".join(pieces)
    if not anchored:
        glob = "**/" + glob
    return PathPattern.compile(root, glob, dir_only)


def _relative(path: str, root: str) -> str | None:
    if path == root:
        return ""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


def generic_matches(content: str, input: dict[str, Any]) -> bool:
    """Content of a rule for a tool without its own syntax: a glob on its path, pattern or URL;
    `domain:host` (WebFetch's rules) matches a `url` on that host, `domain:*.example.com` its subdomains."""
    if content.startswith(DOMAIN_PREFIX):
        host = url_host(input.get("url"))
        pattern = content[len(DOMAIN_PREFIX) :].strip().lower()
        return bool(host) and fnmatch.fnmatchcase(host, pattern)
    for key in ("file_path", "path", "pattern", "url", "notebook_path"):
        value = input.get(key)
        if isinstance(value, str):
            return value == content or fnmatch.fnmatchcase(value, content)
    return False


def url_host(url: Any) -> str:
    """The host of a URL, lower-cased; "" when there is none or the URL does not parse."""
    try:
        return (urlsplit(url).hostname or "") if isinstance(url, str) else ""
    except ValueError:
        return ""


# Environment assignments that do not change which program runs or how it loads:
# `NODE_ENV=test npm test` still matches `Bash(npm test:*)`, `PATH=. npm test` does not.
SAFE_ENV_VARS = frozenset({
    "NODE_ENV", "CI", "DEBUG", "NO_COLOR", "FORCE_COLOR", "TERM", "LANG", "LC_ALL", "TZ", "RUST_BACKTRACE",
    "RUST_LOG", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "GOOS", "GOARCH",
    "CGO_ENABLED", "GOEXPERIMENT", "GOFLAGS", "COLUMNS", "PAGER", "GIT_PAGER",
})
# Commands whose `a` rule is the exact command: a prefix would license any target.
_EXACT_ONLY = frozenset({
    "rm", "rmdir", "mv", "cp", "chmod", "chown", "chgrp", "ln", "dd", "truncate", "shred", "kill", "pkill",
    "killall", "tee", "sed", "touch", "mkdir", "install", "rsync", "scp", "curl", "wget",
})
# Commands whose `a` rule would license arbitrary code: no suggestion.
_NEVER_GENERALISE = frozenset({
    "eval", "exec", "source", ".", "xargs", "env", "command", "builtin", "sudo", "doas", "su", "ssh", "find",
    "watch", "nohup", "timeout", "nice", "time", "stdbuf", "ionice", "flock", "trap", "alias",
    # a prefix rule never covers a change of folder
    "cd", "pushd", "popd", "chdir", "busybox", "toybox", "setsid",
})
_SUBCOMMAND_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_:.")


@dataclass(frozen=True, slots=True)
class PathTarget:
    """The file or folder a path tool touches."""

    kind: str  # "read" | "write"
    shown: str
    resolved: str
    is_dir: bool
    inside: bool


@dataclass(frozen=True, slots=True)
class WorkingDirs:
    cwd: Path
    dirs: tuple[str, ...]
    home: str

    def inside(self, resolved: str) -> bool:
        return any(resolved == d or resolved.startswith(d.rstrip(os.sep) + os.sep) for d in self.dirs)

    def resolve(self, path: str) -> str:
        return os.path.realpath(os.path.join(self.cwd, os.path.expanduser(path)))


def path_target(name: str, input: dict[str, Any], env: WorkingDirs) -> PathTarget | None:
    if name not in PATH_TOOLS:
        return None
    key = "notebook_path" if name.startswith("Notebook") else "file_path"
    value = input.get(key)
    if name in ("Glob", "Grep"):
        value = input.get("path", ".")
        pattern = input.get("pattern")
        if name == "Glob" and isinstance(pattern, str) and os.path.isabs(os.path.expanduser(pattern)):
            literal = []
            for piece in os.path.expanduser(pattern).split("/")[:-1]:
                if set(piece) & set("*?[{"):
                    break
                literal.append(piece)
            value = "/".join(literal) or "/"
    if not isinstance(value, str) or not value:
        return None
    resolved = env.resolve(value)
    kind = "write" if name in EDIT_TOOLS else "read"
    return PathTarget(kind, value, resolved, os.path.isdir(resolved), env.inside(resolved))


def rule_forms(part: CommandPart) -> set[str]:
    """Every spelling a deny or ask rule may be written against: `FOO=1 sudo /bin/rm x` is also `rm x`."""
    argv = list(part.argv)
    forms = {part.text.strip(), part.normalized(argv), " ".join([*part.assignments, part.normalized(argv)])}
    for words, _ in unwrap_steps(argv):
        if words:
            forms.add(part.normalized(words))
            forms.add(part.normalized([words[0].rsplit("/", 1)[-1], *words[1:]]))
            if words[0].rsplit("/", 1)[-1] == "git":
                forms.add(part.normalized(["git", *strip_git_options(words[1:])]))
    return {f for f in forms if f}


# git's options before the subcommand, and those of them that take the next word as their value.
_GIT_VALUE_OPTIONS = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--super-prefix",
    "--attr-source", "--list-cmds",
})


def strip_git_options(args: list[str]) -> list[str]:
    """`-C . -c x=y --no-pager push -f` -> `push -f`: a rule about `git push` sees every spelling."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    if i < len(args) and args[i] == "--":
        i += 1
    return args[i:]


def fallback_forms(command: str) -> set[str]:
    """For a command bashlex cannot parse: its segments split at shell operators by shlex."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return set()
    forms: set[str] = set()
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|()<>"):
            words = [w for w in segment if not (("=" in w) and w.split("=", 1)[0].isidentifier())]
            for form, _ in unwrap_steps(words):
                if form:
                    forms.add(" ".join(form))
                    forms.add(" ".join([form[0].rsplit("/", 1)[-1], *form[1:]]))
                    if form[0].rsplit("/", 1)[-1] == "git":
                        forms.add(" ".join(["git", *strip_git_options(form[1:])]))
            segment = []
        else:
            segment.append(token)
    return forms


def suggest_bash(parts: list[CommandPart], env: WorkingDirs) -> str | None:
    rules: list[str] = []
    for part in parts:
        rule = _suggest_part(part, env)
        if rule is None:
            return None
        rules.append(rule)
    return ", ".join(dict.fromkeys(rules)) or None


def _suggest_part(part: CommandPart, env: WorkingDirs) -> str | None:
    if not part.words or any(a.split("=", 1)[0] not in SAFE_ENV_VARS for a in part.assignments):
        return None
    if any(r.writes and r.target is not None and r.target.value not in ("/dev/null", "/dev/stdout", "/dev/stderr")
           for r in part.redirects):
        return None  # a prefix rule never covers an output redirection
    argv, _ = unwrap(part.argv, BENIGN_WRAPPERS)
    words = part.words[len(part.words) - len(argv) :]
    if not argv or words[0].expands or any(c in argv[0] for c in "*()"):
        return None
    name = argv[0]
    program = name.rsplit("/", 1)[-1]
    if program in _NEVER_GENERALISE:
        return None
    if is_read_only_part(part):
        outside = [r for r in (env.resolve(p) for p in read_paths(part)) if not env.inside(r)]
        folders = {r if os.path.isdir(r) else os.path.dirname(r) for r in outside}
        if outside and "/" not in folders and not any(c in f for f in folders for c in "*?[]()"):
            return ", ".join(f"Read(/{f.rstrip('/')}/**)" for f in sorted(folders))
        return None
    if program in _EXACT_ONLY:
        exact = part.normalized(argv)
        return None if any(c in exact for c in "*()") else f"Bash({exact})"
    prefix = [name]
    rest = argv[1:]
    if program in INTERPRETERS:
        # `python -m pytest`, `node scripts/build.js`: pin the module or script; `-c CODE` cannot be pinned.
        if rest[:1] == ["-m"] and len(rest) > 1:
            prefix += rest[:2]
        elif rest and not rest[0].startswith("-"):
            prefix.append(rest[0])
        else:
            return None
    else:
        for word in rest[:2]:
            if not set(word) <= _SUBCOMMAND_CHARS or word.startswith("-"):
                break
            prefix.append(word)
            if word not in ("run", "exec", "x", "compose", "run-script", "workspace"):
                break
    text = " ".join(prefix)
    if any(c in text for c in "*()"):
        return None
    return f"Bash({text}:*)"


def suggest_for_path(
    name: str, target: PathTarget | None, env: WorkingDirs, input: dict[str, Any] | None = None
) -> str | None:
    if name not in PATH_TOOLS:
        host = url_host((input or {}).get("url"))
        if host and not any(c in host for c in "*?[]()"):
            return f"{name}({DOMAIN_PREFIX}{host})"  # a fetch: its domain, not every URL
        return name if name not in ("Bash",) else None
    if target is None:
        return None
    family = "Edit" if target.kind == "write" else "Read"
    folder = target.resolved if target.is_dir else os.path.dirname(target.resolved)
    if folder == "/" or any(c in folder for c in "*?[]()"):
        return None
    if env.inside(target.resolved) and target.resolved.startswith(str(env.cwd)):
        relative = os.path.relpath(folder, env.cwd)
        if relative == ".":
            return f"{family}(./{os.path.basename(target.resolved)})" if not target.is_dir else f"{family}(./**)"
        return f"{family}(./{relative}/**)"
    return f"{family}(/{folder}/**)"
