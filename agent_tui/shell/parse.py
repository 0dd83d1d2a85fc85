"""A shell command as the permission checks see it, from a bashlex parse.

`parse_command` turns a command string into its simple commands
(`CommandPart`: words after quote removal, assignments, redirections),
including those inside `$(…)`, backticks, `<(…)`, subshells, loops and
function bodies, plus the scripts a part runs itself (`sh -c '…'`,
`eval '…'`, `bash <<EOF`, `find -exec`), parsed the same way.  Code whose
text is only known when it runs (`$cmd args`, `eval "$x"`) is listed in
`hidden` so callers can refuse to vouch for it.  The read-only classifier
and the danger checks both read this model.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
# Commands that run the rest of their words as a command, with the options that take a value.
_WRAPPER_OPTIONS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "ionice": frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-t"}),
    "xargs": frozenset({
        "-I", "-n", "-P", "-d", "-E", "-e", "-L", "-l", "-s", "-a", "--arg-file", "--delimiter",
        "--max-args", "--max-procs", "--replace", "--eof", "--max-lines", "--max-chars",
    }),
    "sudo": frozenset({
        "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
        "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout",
    }),
    "doas": frozenset({"-u", "-C"}),
    "flock": frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}),
    # Multi-call binaries: `busybox rm -rf /` is rm.
    "busybox": frozenset(),
    "toybox": frozenset(),
    "setsid": frozenset(),
}
# Wrappers whose first operand is not the command (timeout DURATION, flock FILE).
_WRAPPER_OPERANDS = {"timeout": 1, "flock": 1}
# Text in a word that bash expands but bashlex leaves unparsed.
_UNPARSED_EXPANSION = re.compile(r"\$\(|`|[<>]\(")
# Wrappers that leave the command's meaning alone: an allow rule for the command covers them.
BENIGN_WRAPPERS = frozenset({"nice", "nohup", "time", "timeout", "stdbuf", "ionice"})


@dataclass(frozen=True, slots=True)
class Word:
    # After quote removal ($'…' decoded); parameter expansions and substitutions stay as written.
    value: str
    raw: str
    # Contains an expansion or substitution: the real value is only known when the command runs.
    expands: bool


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str
    # None for fd duplication such as 2>&1.
    target: Word | None
    # A here-document's body, or a here-string's word.
    body: str | None = None
    # A here-document whose delimiter is quoted: its body is literal text, nothing expands.
    quoted: bool = False

    @property
    def writes(self) -> bool:
        return self.op in OUTPUT_REDIRECTS and self.target is not None


@dataclass(eq=False)
class CommandPart:
    """One simple command: `FOO=1 rm -rf "$d" > log`."""

    text: str
    assignments: tuple[str, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    node: Any = field(repr=False)
    # Simple commands inside this one's words and redirections ($(…), `…`, <(…)).
    substituted: list[CommandPart] = field(default_factory=list, repr=False)

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.value for w in self.words)

    @property
    def name(self) -> str:
        return self.words[0].value if self.words else ""

    def normalized(self, argv: tuple[str, ...] | list[str] | None = None) -> str:
        """Words joined by single spaces; words containing whitespace are quoted."""
        return " ".join(w if w and not re.search(r"\s", w) else shlex.quote(w) for w in (argv or self.argv))


@dataclass(eq=False)
class ParsedCommand:
    source: str
    trees: list[Any]
    parts: list[CommandPart]
    # For each pipeline, the simple commands of each stage.
    pipelines: list[list[list[CommandPart]]]
    # Function definitions: (name, the simple commands of the body).
    functions: list[tuple[str, list[CommandPart]]]
    # Scripts the parts run themselves (sh -c, eval, bash <<EOF, find -exec).
    nested: list[ParsedCommand]
    # Why some code this command runs cannot be seen before it runs.
    hidden: list[str]
    # Redirections of compound commands: `{ cat; } < file`, `(ls) > out`.
    compound_redirects: list[Redirect] = field(default_factory=list)
    _by_node: dict[int, CommandPart] = field(default_factory=dict, repr=False)

    def every_part(self) -> Iterator[CommandPart]:
        """This command's simple commands and those of the scripts it runs."""
        yield from self.parts
        for inner in self.nested:
            yield from inner.every_part()

    def every_command(self) -> Iterator[ParsedCommand]:
        yield self
        for inner in self.nested:
            yield from inner.every_command()

    def part_for(self, node: Any) -> CommandPart:
        return self._by_node[id(node)]


@lru_cache(maxsize=256)
def parse_command(command: str, *, depth: int = 0) -> ParsedCommand | None:
    """The model of `command`, or None when bashlex cannot parse it.

    Cached: the classifier, the danger checks and the policy each ask about
    the same command; callers must not modify the result.
    """
    if depth > 4:
        return None
    if not command.strip():
        return ParsedCommand(command, [], [], [], [], [], [])
    source = _unquote_heredoc_delimiters(command)
    import bashlex  # builds its parser tables on import (~80 ms): only when a command is parsed

    try:
        trees = list(bashlex.parse(source))
    except Exception:  # bashlex raises several unrelated types for unsupported syntax
        return None
    parsed = ParsedCommand(command, trees, [], [], [], [], [])
    for node in walk(trees):
        if node.kind == "parameter" and _UNPARSED_EXPANSION.search(getattr(node, "value", "") or ""):
            parsed.hidden.append(f"a parameter expansion runs a command: ${{{node.value}}}")
    nodes = [node for node in walk(trees) if node.kind == "command"]
    for node in nodes:
        part = _make_part(node, command)
        parsed.parts.append(part)
        parsed._by_node[id(node)] = part
    for part in parsed.parts:
        part.substituted = [
            parsed.part_for(n) for n in walk(list(children(part.node))) if n.kind == "command"
        ]
    for node in walk(trees):
        if node.kind == "pipeline":
            stages = [child for child in node.parts if child.kind != "pipe" and child.kind != "reservedword"]
            parsed.pipelines.append(
                [[parsed.part_for(n) for n in walk([stage]) if n.kind == "command"] for stage in stages]
            )
        elif node.kind == "function":
            body = [parsed.part_for(n) for n in walk(list(children(node))) if n.kind == "command"]
            parsed.functions.append((node.name.word, body))
    own = {id(child) for part in parsed.parts for child in part.node.parts if child.kind == "redirect"}
    parsed.compound_redirects = [
        make_redirect(node, command) for node in walk(trees) if node.kind == "redirect" and id(node) not in own
    ]
    for part in parsed.parts:
        _collect_inner(parsed, part, depth)
    return parsed


def unwrap(argv: tuple[str, ...] | list[str], wrappers: frozenset[str] | None = None) -> tuple[list[str], list[str]]:
    """The command a wrapper runs: `timeout 5 nice rm x` -> (["rm", "x"], ["timeout", "nice"]).

    Only the wrappers in `wrappers` (default: all) are stripped.
    """
    steps = unwrap_steps(argv, wrappers)
    return steps[-1][0], [name for _, name in steps[1:]]


def unwrap_steps(
    argv: tuple[str, ...] | list[str], wrappers: frozenset[str] | None = None
) -> list[tuple[list[str], str]]:
    """Each command line met while stripping wrappers, with the wrapper just stripped ("" first).

    `sudo timeout 5 rm x` -> [(sudo timeout 5 rm x, ""), (timeout 5 rm x, "sudo"), (rm x, "timeout")].
    """
    words = list(argv)
    steps = [(words, "")]
    while words:
        name = words[0].rsplit("/", 1)[-1]
        if name not in _WRAPPER_OPTIONS or (wrappers is not None and name not in wrappers):
            break
        if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
            break  # `command -v x` looks x up; it runs nothing
        takes_value = _WRAPPER_OPTIONS[name]
        operands = _WRAPPER_OPERANDS.get(name, 0)
        i = 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if name == "env" and "=" in word and not word.startswith("-"):
                i += 1
            elif word.startswith("-") and len(word) > 1:
                i += 2 if word in takes_value else 1
            elif operands:
                operands -= 1
                i += 1
            else:
                break
        words = words[i:]
        steps.append((words, name))
    return steps


# ------------------------------------------------------------ tree helpers


def children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list", "redirects"):
        yield from getattr(node, attr, None) or []
    for attr in ("command", "output", "heredoc"):
        child = getattr(node, attr, None)
        if hasattr(child, "kind"):
            yield child


def walk(nodes: list[Any]) -> Iterator[Any]:
    for node in nodes:
        yield node
        yield from walk(list(children(node)))


def _make_part(node: Any, source: str) -> CommandPart:
    assignments: list[str] = []
    words: list[Word] = []
    redirects: list[Redirect] = []
    for child in node.parts:
        if child.kind == "assignment":
            assignments.append(child.word)
        elif child.kind == "word":
            words.append(make_word(child, source))
        elif child.kind == "redirect":
            redirects.append(make_redirect(child, source))
    return CommandPart(
        source[node.pos[0] : node.pos[1]], tuple(assignments), tuple(words), tuple(redirects), node
    )


def make_redirect(node: Any, source: str) -> Redirect:
    target = node.output if hasattr(node.output, "kind") else None
    heredoc = getattr(node, "heredoc", None)
    body = None
    quoted = False
    if heredoc is not None:
        body = heredoc.value.rsplit("\n", 1)[0] if "\n" in heredoc.value else ""
        quoted = any(q in source[node.pos[0] : node.pos[1]] for q in "'\"\\")
    elif node.type == "<<<" and target is not None:
        body = make_word(target, source).value
    word = make_word(target, source) if target is not None else None
    return Redirect(node.type, word, body, quoted)


def make_word(node: Any, source: str) -> Word:
    raw = source[node.pos[0] : node.pos[1]]
    expands = False
    for part in getattr(node, "parts", None) or []:
        if part.kind == "tilde":
            continue
        if part.kind == "parameter" and source.startswith("$'", part.pos[0]):
            continue  # ANSI-C quoting, decoded below
        expands = True
    value = _decode_ansi_c(raw) if "$'" in raw else node.word
    return Word(value, raw, expands)


def _collect_inner(parsed: ParsedCommand, part: CommandPart, depth: int) -> None:
    """Record the scripts `part` runs itself, or why they cannot be seen."""
    if part.words and part.words[0].expands:
        parsed.hidden.append(f"the command name {part.words[0].raw} is only known at run time")
    for redirect in part.redirects:
        body = redirect.body
        if redirect.op in ("<<", "<<-") and body and not redirect.quoted:
            if re.search(r"\$\(|`", body):
                parsed.hidden.append("an unquoted here-document runs a command substitution")
    steps = unwrap_steps(part.argv)
    for (before, _), (after, wrapper) in zip(steps, steps[1:], strict=False):
        options = before[1 : len(before) - len(after)]
        if wrapper == "env" and any(o.startswith(("-S", "--split-string")) for o in options):
            parsed.hidden.append("env -S runs a command line given as one string")
    argv = steps[-1][0]
    words = _words_after_unwrap(part, len(argv))
    if not argv:
        return
    name = argv[0].rsplit("/", 1)[-1]
    scripts: list[str] = []
    if name in SHELLS:
        script_at = _shell_c_script(argv)
        if script_at is not None:
            if script_at >= len(words) or words[script_at].expands:
                parsed.hidden.append(f"{name} -c runs a command only known at run time")
            else:
                scripts.append(words[script_at].value)
        elif not any(not a.startswith("-") for a in argv[1:]):
            scripts += [r.body for r in part.redirects if r.body is not None]
    elif name == "eval":
        if any(w.expands for w in words[1:]):
            parsed.hidden.append("eval runs a command only known at run time")
        else:
            scripts.append(" ".join(argv[1:]))
    elif name == "watch":
        rest, i = argv[1:], 0
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] in ("-n", "--interval", "-d", "--differences") and "=" not in rest[i] else 1
        if rest[i:]:
            scripts.append(" ".join(rest[i:]))
    elif name == "find":
        scripts += _find_exec_scripts(argv)
    for script in scripts:
        inner = parse_command(script, depth=depth + 1)
        if inner is None:
            parsed.hidden.append(f"a script it runs could not be parsed: {script[:60]!r}")
        else:
            parsed.nested.append(inner)


def _words_after_unwrap(part: CommandPart, remaining: int) -> tuple[Word, ...]:
    return part.words[len(part.words) - remaining :] if remaining else ()


def _shell_c_script(argv: list[str]) -> int | None:
    """Index of the script operand of `sh -c SCRIPT` (option clusters such as -lc and -ec count)."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            return None
        if not arg.startswith("-") or len(arg) == 1:
            return None
        if not arg.startswith("--") and "c" in arg[1:]:
            return i + 1
    return None


def _find_exec_scripts(argv: list[str]) -> list[str]:
    scripts = []
    i = 0
    while i < len(argv):
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                scripts.append(shlex.join(argv[i + 1 : j]))
            i = j
        i += 1
    return scripts


# ------------------------------------------------------------ source preprocessing


def _unquote_heredoc_delimiters(source: str) -> str:
    """bashlex rejects quoted here-document delimiters (`<<'EOF'`), which commit commands use.

    Replace the quotes with spaces, so positions stay valid (`Redirect.quoted`
    reads the original text).  The scan follows quoting and `$(…)` nesting and
    skips here-document bodies.
    """
    if "<<" not in source:
        return source
    out = list(source)
    stack = ["code"]
    pending: list[tuple[str, bool]] = []
    i, n = 0, len(source)
    while i < n:
        if stack[-1] in ("squote", "ansi", "dquote"):
            i = _step_quoted(source, i, stack)
            continue
        c = source[i]
        if c == "\n" and pending:
            i = _skip_heredoc_bodies(source, i + 1, pending)
            pending = []
        elif source.startswith("<<", i) and not source.startswith("<<<", i):
            i = _heredoc_operator(source, i, out, pending)
        else:
            i = _step_code(source, i, stack)
    return "".join(out)


def _step_quoted(source: str, i: int, stack: list[str]) -> int:
    """One step inside quotes ('…', $'…', "…"): where the scan goes next."""
    c, ctx = source[i], stack[-1]
    if c == "\\" and ctx != "squote":
        return i + 2
    if ctx == "dquote":
        if c == '"':
            stack.pop()
        elif source.startswith("$(", i):
            stack.append("subst")
            return i + 2
        elif c == "`":
            stack.append("btick")
    elif c == "'":
        stack.pop()
    return i + 1


def _step_code(source: str, i: int, stack: list[str]) -> int:
    """One step of shell syntax (top level, `$(…)`, `(…)`, backquotes)."""
    c, ctx = source[i], stack[-1]
    if c == "\\":
        return i + 2
    if c == "'":
        stack.append("squote")
    elif c == '"':
        stack.append("dquote")
    elif source.startswith("$'", i):
        stack.append("ansi")
        return i + 2
    elif source.startswith("$(", i):
        stack.append("subst")
        return i + 2
    elif c == "(":
        stack.append("paren")
    elif c == ")" and ctx in ("subst", "paren"):
        stack.pop()
    elif c == "`":
        if ctx == "btick":
            stack.pop()
        else:
            stack.append("btick")
    elif c == "#" and (i == 0 or source[i - 1] in " \t\n;|&()"):
        end = source.find("\n", i)
        return len(source) if end < 0 else end
    return i + 1


def _heredoc_operator(source: str, i: int, out: list[str], pending: list[tuple[str, bool]]) -> int:
    """At `<<`: note the delimiter (its body starts after the line), unquote it in `out`,
    and return where the scan goes next."""
    n = len(source)
    j = i + 2
    strip_tabs = source.startswith("-", j)
    j += strip_tabs
    while j < n and source[j] in " \t":
        j += 1
    if j < n and source[j] in "'\"":
        end = source.find(source[j], j + 1)
        if end > j + 1 and "\n" not in source[j:end]:
            out[j] = out[end] = " "
            pending.append((source[j + 1 : end], strip_tabs))
            return end + 1
    elif j < n and source[j] == "\\":
        m = re.match(r"\\(\w+)", source[j:])
        if m:
            out[j] = " "
            pending.append((m.group(1), strip_tabs))
            return j + m.end()
    m = re.match(r"\w+", source[j:])
    if m:
        pending.append((m.group(0), strip_tabs))
        return j + m.end()
    return i + 1


def _skip_heredoc_bodies(source: str, i: int, pending: list[tuple[str, bool]]) -> int:
    for delimiter, strip_tabs in pending:
        while i < len(source):
            end = source.find("\n", i)
            line = source[i:] if end < 0 else source[i:end]
            i = len(source) if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return i


_ANSI_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b",
    "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?",
}


def _decode_ansi_c(raw: str) -> str:
    """Quote removal for a word that uses $'…' (bashlex leaves it undecoded)."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if raw.startswith("$'", i):
            i += 2
            while i < n and raw[i] != "'":
                if raw[i] == "\\" and i + 1 < n:
                    i, text = _ansi_escape(raw, i + 1)
                    out.append(text)
                else:
                    out.append(raw[i])
                    i += 1
            i += 1
        elif c == "'":
            end = raw.find("'", i + 1)
            end = n if end < 0 else end
            out.append(raw[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    out.append(raw[i + 1])
                    i += 2
                else:
                    out.append(raw[i])
                    i += 1
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(raw[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ansi_escape(raw: str, i: int) -> tuple[int, str]:
    c = raw[i]
    if c in _ANSI_ESCAPES:
        return i + 1, _ANSI_ESCAPES[c]
    for prefix, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if c == prefix:
            m = re.match(rf"[0-9a-fA-F]{{1,{digits}}}", raw[i + 1 :])
            if m:
                return i + 1 + m.end(), chr(int(m.group(0), base))
    m = re.match(r"[0-7]{1,3}", raw[i:])
    if m:
        return i + m.end(), chr(int(m.group(0), 8))
    if c == "c" and i + 1 < len(raw):
        return i + 2, chr(ord(raw[i + 1]) & 0x1F)
    return i + 1, "\\" + c
