"""What a request to the demo model asks for: list, read, search, run, write, joined by and/then."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Intent:
    tool: str
    input: dict[str, Any]
    # Lower-case verb phrase for the answer text: "read `a.py`".
    phrase: str


_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’"}
_SEPARATOR = re.compile(r"\s+(?:and\s+then|and\s+also|and|then|also)\s+|\s*;\s*|\s*,\s*(?:and\s+|then\s+)?")
_FILLER = re.compile(
    r"^(?:(?:please|pls|kindly|now|then|also|first|next|finally|and|ok(?:ay)?|so|hey|hi|hello)\b[\s,!.]*"
    r"|(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"|i\s+(?:want|need|would\s+like)\s+(?:you\s+)?to\s+"
    r"|go\s+ahead\s+and\s+|let'?s\s+|try\s+to\s+|help\s+me\s+)+",
    re.IGNORECASE,
)
_PATH_STOPWORDS = {
    "the", "this", "that", "current", "my", "our", "your", "project", "repo", "repository",
    "directory", "folder", "dir", "here", "cwd", "working", "code", "codebase", "all", "files",
    "file", "source", "sources", "tree", "it", "everything",
}
_LANGUAGE_EXT = {
    "python": "py", "py": "py", "javascript": "js", "js": "js", "typescript": "ts", "ts": "ts",
    "rust": "rs", "go": "go", "markdown": "md", "md": "md", "json": "json", "yaml": "yaml",
    "yml": "yml", "toml": "toml", "c": "c", "cpp": "cpp", "java": "java", "ruby": "rb",
    "shell": "sh", "html": "html", "css": "css", "text": "txt", "txt": "txt",
}


def _split_clauses(line: str) -> list[tuple[str, str]]:
    """(separator before it, clause) pairs, splitting outside quotes only."""
    out: list[tuple[str, str]] = []
    sep, start, i, quote = "", 0, 0, None
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in _QUOTES and (i == 0 or not line[i - 1].isalnum() or ch != "'"):
            closing = _QUOTES[ch]
            if closing in line[i + 1 :]:
                quote = closing
                i += 1
                continue
        match = _SEPARATOR.match(line, i)
        if match and match.end() > match.start():
            out.append((sep, line[start:i]))
            sep, start, i = match.group(0), match.end(), match.end()
            continue
        i += 1
    out.append((sep, line[start:]))
    return [(s, c) for s, c in out if c.strip() or s]


def parse_requests(text: str, cwd: str) -> list[Intent]:
    """The tool requests in a user message, in order (empty: none understood)."""
    intents: list[Intent] = []
    current: str | None = None  # The clause text behind intents[-1].
    for n, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if not stripped:
            continue
        pieces = (
            [("", stripped)] if stripped.startswith("$ ") else _split_clauses(stripped)
        )
        if n and pieces:
            pieces[0] = ("\n", pieces[0][1])
        for sep, clause in pieces:
            intent = _parse_clause(clause, cwd)
            if intent is not None:
                intents.append(intent)
                current = clause
                continue
            if current is None or not clause.strip():
                continue
            prev = intents[-1]
            token = _first_token(clause.strip())
            if prev.tool == "Read" and token and _looks_like_path(token[0]) and not token[1].strip():
                path = token[0]
                intents.append(_read_intent(path, cwd))
                current = clause
                continue
            merged = current + sep + clause
            again = _parse_clause(merged, cwd)
            if again is not None and again.tool == prev.tool:
                intents[-1] = again
                current = merged
    return intents


def _parse_clause(clause: str, cwd: str) -> Intent | None:
    clause = clause.strip()
    if clause.startswith("$ "):
        command = clause[2:].strip()
        return _bash_intent(command) if command else None
    clause = _FILLER.sub("", clause).strip()
    if not clause:
        return None
    for parser in (_parse_write, _parse_run, _parse_list, _parse_read, _parse_search):
        intent = parser(clause, cwd)
        if intent is not None:
            return intent
    return None


def _first_token(text: str) -> tuple[str, str] | None:
    """(first word or quoted string, rest).  Trailing sentence punctuation is dropped."""
    text = text.lstrip()
    if not text:
        return None
    if text[0] in _QUOTES:
        closing = _QUOTES[text[0]]
        end = text.find(closing, 1)
        if end > 0:
            return text[1:end], text[end + 1 :]
    match = re.match(r"\S+", text)
    assert match is not None
    word = match.group(0)
    rest = text[match.end() :]
    stripped = word.rstrip(".,;:!?)")
    if stripped in ("", ".", ".."):
        stripped = word if word in (".", "..") else stripped
    return (stripped, rest) if stripped else None


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] in _QUOTES and text.endswith(_QUOTES[text[0]]):
        return text[1:-1]
    return text


def _looks_like_path(token: str) -> bool:
    return bool(re.search(r"[./\\~]", token)) or token.isupper()


def _abspath(path: str, cwd: str) -> str:
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(cwd, path)
    return os.path.normpath(path)


def _code(text: str) -> str:
    """Inline Markdown code, safe for text containing backticks."""
    text = " ".join(text.split())
    if len(text) > 80:
        text = text[:79] + "…"
    if "`" not in text:
        return f"`{text}`"
    longest = max(len(run) for run in re.findall(r"`+", text))
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def _path_after_preposition(rest: str) -> str | None:
    match = re.search(r"\b(?:in|under|inside|within|of|from)\s+(.+)$", rest, re.IGNORECASE)
    if not match:
        return None
    remaining = match.group(1)
    while True:
        token = _first_token(remaining)
        if token is None:
            return None
        word, remaining = token
        if word.lower() not in _PATH_STOPWORDS:
            return word


_LIST_VERB = re.compile(r"^(?P<verb>list|ls|dir|tree)\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_SHOW_FILES = re.compile(
    r"^(?:show|display|find|get|give|see|print)\b(?P<rest>.*?\b(?:files|folders|directories|everything)\b.*)$",
    re.IGNORECASE | re.DOTALL,
)
_WHAT_FILES = re.compile(
    r"^(?:what|which)\b(?P<rest>.*\b(?:files|folders|here|directory|folder)\b.*)$",
    re.IGNORECASE | re.DOTALL,
)


def _parse_list(clause: str, cwd: str) -> Intent | None:
    match = _LIST_VERB.match(clause) or _SHOW_FILES.match(clause) or _WHAT_FILES.match(clause)
    if not match:
        return None
    rest = re.sub(r"[?!.,;:]+\s*$", "", match.group("rest"))
    named = re.search(r"\b(?:named|called|matching)\s+(.+)$", rest, re.IGNORECASE)
    pattern = "**/*"
    path: str | None = None
    if named:
        token = _first_token(named.group(1))
        if token is None:
            return None
        name = token[0]
        pattern = name if ("*" in name or "?" in name) else f"*{name}*"
        if "/" not in pattern:
            pattern = f"**/{pattern}"
        rest = rest[: named.start()]
    else:
        glob = re.search(r"(?<!\S)[\w./-]*[*?][\w.*?/-]*", rest)
        if glob:
            pattern = glob.group(0)
            if "/" not in pattern:
                pattern = f"**/{pattern}"
            rest = rest[: glob.start()] + rest[glob.end() :]
        else:
            ext = re.search(r"(?:\.|\b)(\w+)\s+files\b", rest, re.IGNORECASE)
            if ext and ext.group(1).lower() in _LANGUAGE_EXT:
                pattern = f"**/*.{_LANGUAGE_EXT[ext.group(1).lower()]}"
    if match.re is _LIST_VERB and match.group("verb").lower() != "list":
        # "ls src" / "ls -la src": the first argument that is not an option.
        words = [w for w in rest.split() if not w.startswith("-")]
        if words and words[0].lower() not in _PATH_STOPWORDS:
            path = words[0]
    if path is None:
        path = _path_after_preposition(rest)
    data: dict[str, Any] = {"pattern": pattern}
    if path is not None:
        data["path"] = _abspath(path, cwd)
    if pattern == "**/*":
        phrase = "list the files here" if path is None else f"list the files in {_code(path)}"
    else:
        phrase = f"look for files matching {_code(pattern)}" + (
            f" in {_code(path)}" if path is not None else ""
        )
    return Intent("Glob", data, phrase)


_READ = re.compile(
    r"^(?:read|show|open|cat|view|display|print|look\s+at|inspect)\s+(?:me\s+)?(?:the\s+)?"
    r"(?:(?:contents?|source|code|text)\s+of\s+)?(?:the\s+)?(?:file\s+)?(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)


def _read_intent(path: str, cwd: str) -> Intent:
    return Intent("Read", {"file_path": _abspath(path, cwd)}, f"read {_code(path)}")


def _parse_read(clause: str, cwd: str) -> Intent | None:
    match = _READ.match(clause)
    if not match:
        return None
    token = _first_token(match.group("rest"))
    if token is None or token[0].lower() in _PATH_STOPWORDS:
        return None
    return _read_intent(token[0], cwd)


_SEARCH = re.compile(
    r"^(?:search|grep|rg|find|look|locate)\b(?:\s+(?:for|up))?"
    r"(?:\s+(?:the|all|every|any|string|text|word|pattern|term|regex|occurrences\s+of|"
    r"uses\s+of|usages\s+of|references\s+to|mentions\s+of|where))*\s+(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_REGEX_META = re.compile(r"([.^$*+?()\[\]{}|\\])")


def _parse_search(clause: str, cwd: str) -> Intent | None:
    match = _SEARCH.match(clause)
    if not match:
        return None
    rest = match.group("rest").strip()
    path: str | None = None
    if rest[:1] in _QUOTES and _QUOTES[rest[0]] in rest[1:]:
        token = _first_token(rest)
        assert token is not None
        pattern, tail = token
        path = _path_after_preposition(tail)
    else:
        parts = re.split(r"\s+(?:in|under|inside|within)\s+", rest, flags=re.IGNORECASE)
        pattern = parts[0].strip().rstrip(".,;:!?")
        if len(parts) > 1:
            path = _path_after_preposition("in " + " in ".join(parts[1:]))
    if not pattern:
        return None
    try:
        re.compile(pattern)
    except re.error:
        pattern = _REGEX_META.sub(r"\\\1", pattern)
    data: dict[str, Any] = {"pattern": pattern}
    if path is not None:
        data["path"] = _abspath(path, cwd)
    data["output_mode"] = "content"
    data["-n"] = True
    phrase = f"search for {_code(pattern)}" + (f" in {_code(path)}" if path is not None else "")
    return Intent("Grep", data, phrase)


_RUN = re.compile(
    r"^(?:run|execute|exec)\s+(?:the\s+)?(?:(?:shell\s+)?command\s+)?(?P<cmd>.+)$",
    re.IGNORECASE | re.DOTALL,
)


def _bash_intent(command: str) -> Intent:
    description = " ".join(command.split())
    if len(description) > 60:
        description = description[:59] + "…"
    return Intent("Bash", {"command": command, "description": f"Run {description}"}, f"run {_code(command)}")


def _parse_run(clause: str, cwd: str) -> Intent | None:
    match = _RUN.match(clause)
    if not match:
        return None
    command = _unquote(match.group("cmd").strip())
    if command.startswith("$ "):
        command = command[2:].strip()
    return _bash_intent(command) if command else None


_WRITE_WITH = re.compile(
    r"^(?:write|create|make)\s+(?:a\s+)?(?:new\s+)?(?:file\s+)?(?:called\s+|named\s+)?"
    r"(?P<x>\"[^\"]+\"|'[^']+'|`[^`]+`|\S+)\s+"
    r"(?:with|containing|that\s+contains|saying)\s+(?:the\s+)?(?:(?:content|contents|text)\s*:?\s+)?"
    r"(?P<y>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_WRITE_TO = re.compile(
    r"^write\s+(?P<y>.+?)\s+(?:to|into)\s+(?:a\s+|the\s+)?(?:new\s+)?(?:file\s+)?(?P<x>\S+)$",
    re.IGNORECASE | re.DOTALL,
)


def _parse_write(clause: str, cwd: str) -> Intent | None:
    match = _WRITE_WITH.match(clause) or _WRITE_TO.match(clause)
    if not match:
        return None
    path = _unquote(match.group("x")).rstrip(",;:!?")
    if not path or path.lower() in _PATH_STOPWORDS:
        return None
    if match.re is _WRITE_TO and not _looks_like_path(path):
        return None
    content = _unquote(match.group("y")).replace("\\n", "\n").replace("\\t", "\t")
    if not content.endswith("\n"):
        content += "\n"
    return Intent("Write", {"file_path": _abspath(path, cwd), "content": content}, f"write {_code(path)}")
