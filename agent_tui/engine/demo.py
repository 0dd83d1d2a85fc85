"""`DemoModel`: the offline default model (no account, no network).

With no API key and no `ANTHROPIC_BASE_URL`, agent-tui runs this scripted
agent so a fresh install shows the whole product: streaming answers, real
tool calls (several in one response, so they run in parallel), permission
prompts and the timeline.  It reads the last user message:

- tool results -> a short plain summary of them, `end_turn`;
- "list files", "read X", "search for Y", "run Z" / "$ Z", "write X with Y",
  joined by "and" / "then" / "," / ";" -> one response with a tool_use block
  per request (only for tools the request offers), `tool_use`;
- anything else -> a Markdown explanation of what it is and how to connect a
  real model.

The output is built as raw Messages-API event dicts and passed through
`StreamAccumulator`, so the loop sees exactly the event shapes the real API
produces.  Everything is deterministic: the same request gives the same
stream.  The pace is about 80 tokens/s (4 characters a token), scaled by
`speed`; `AGENT_TUI_DEMO_SPEED` sets the default (`0` or `inf`: no delay).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agent_tui.engine.demo_init import init_step
from agent_tui.engine.model import ModelClient, ModelRequest, StreamAccumulator, StreamEvent

SPEED_ENV = "AGENT_TUI_DEMO_SPEED"
TOKENS_PER_SECOND = 80.0
CHARS_PER_TOKEN = 4
DEMO_HEADER = "**Demo model (offline)** — "

_WORKDIR_LINE = re.compile(r"^[ \t]*Working directory:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)
_LINES_SHOWN = 10
_BASH_LINES_SHOWN = 15


def _speed_from_env(default: float = 1.0) -> float:
    raw = os.environ.get(SPEED_ENV, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        return default


def working_directory(system: str | list[dict[str, Any]]) -> str:
    """The `Working directory: <path>` line of a system prompt, else the process cwd."""
    text = system if isinstance(system, str) else "\n".join(
        b.get("text", "") for b in system if isinstance(b, dict)
    )
    match = _WORKDIR_LINE.search(text or "")
    return match.group(1) if match else os.getcwd()


class DemoModel(ModelClient):
    """The offline scripted model."""

    name = "demo"
    label = "demo (offline)"
    offline = True

    def __init__(self, speed: float | None = None, *, requested: bool = False) -> None:
        """`speed` multiplies the pace (2 = twice as fast); `0` or `inf` streams
        with no delay.  Without it, `AGENT_TUI_DEMO_SPEED` or 1.0 applies.
        `requested`: the person asked for it (--offline) although a key is set."""
        self.requested = requested
        self.speed = _speed_from_env() if speed is None else float(speed)

    def _chars_per_second(self) -> float | None:
        """None when there is no delay at all."""
        speed = self.speed
        if not speed > 0 or math.isinf(speed) or math.isnan(speed):
            return None
        return TOKENS_PER_SECOND * CHARS_PER_TOKEN * speed

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        plan = plan_response(request)
        acc = StreamAccumulator()
        rate = self._chars_per_second()
        start = time.monotonic()
        emitted = 0
        events = 0
        for raw in _raw_events(request, plan):
            chars = raw.pop("_chars", 0)
            if chars:
                emitted += chars
                if rate is not None:
                    delay = start + emitted / rate - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
            events += 1
            if rate is None and events % 64 == 0:
                await asyncio.sleep(0)  # Let other tasks (and an abort) run.
            event = acc.feed(raw)
            if event is not None:
                yield event


# ---------------------------------------------------------------- the plan


@dataclass(slots=True)
class DemoToolCall:
    name: str
    input: dict[str, Any]
    id: str = ""


@dataclass(slots=True)
class DemoPlan:
    text: str
    tools: list[DemoToolCall]


def plan_response(request: ModelRequest) -> DemoPlan:
    """What the demo answers to `request` (text, then tool calls), before any cut."""
    turn = sum(1 for m in request.messages if m.get("role") == "assistant") + 1
    available = {t.get("name") for t in request.tools if isinstance(t, dict)}
    step = init_step(request.messages, working_directory(request.system))
    if step is not None:
        text, steps = step
        calls = [DemoToolCall(name, input, f"toolu_demo_{turn}_{n}")
                 for n, (name, input) in enumerate(steps, start=1) if name in available]
        return DemoPlan(DEMO_HEADER + text, calls)
    last = _last_user(request.messages)
    results = [b for b in last if b.get("type") == "tool_result"]
    if results:
        uses = _tool_uses_by_id(request.messages)
        return DemoPlan(_summarize_results(results, uses), [])
    text = "\n".join(b.get("text", "") for b in last if b.get("type") == "text").strip()
    cwd = working_directory(request.system)
    intents = parse_requests(text, cwd)
    if not intents:
        return DemoPlan(_explanation(text, available), [])
    usable = [i for i in intents if i.tool in available]
    missing = [i for i in intents if i.tool not in available]
    lines: list[str] = []
    if usable:
        if len(usable) == 1:
            lines.append(f"{DEMO_HEADER}I'll {usable[0].phrase}.")
        else:
            lines.append(
                f"{DEMO_HEADER}I'll do these {len(usable)} things at once; they are independent, "
                "so the tools can run in parallel:"
            )
            lines.extend(f"- {i.phrase}" for i in usable)
    for n, intent in enumerate(missing):
        prefix = DEMO_HEADER if not usable and n == 0 else ""
        lines.append(
            f"{prefix}The `{intent.tool}` tool isn't available in this session, "
            f"so I can't {intent.phrase}."
        )
    if not usable:
        offered = sorted(name for name in available if name)
        lines.append("")
        lines.append(
            "Tools available here: " + ", ".join(f"`{n}`" for n in offered) + "."
            if offered
            else "No tools are available in this session."
        )
    calls = [
        DemoToolCall(i.tool, i.input, f"toolu_demo_{turn}_{n}") for n, i in enumerate(usable, start=1)
    ]
    return DemoPlan("\n".join(lines), calls)


def _last_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return [{"type": "text", "text": content}]
            return [b for b in content or [] if isinstance(b, dict)]
    return []


def _tool_uses_by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                found[block.get("id", "")] = block
    return found


# ---------------------------------------------------------------- request parsing


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


# -- list (Glob)

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


# -- read (Read)

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


# -- search (Grep)

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


# -- run (Bash)

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


# -- write (Write)

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


# ---------------------------------------------------------------- answers


def _explanation(text: str, available: set[Any]) -> str:
    greeting = re.match(r"^\s*(?:hi|hello|hey|howdy|good\s+(?:morning|afternoon|evening))\b", text, re.I)
    examples = [
        ("list files", "find files with **Glob**", "Glob"),
        ("read README.md", "read a file with **Read**", "Read"),
        ("search for TODO", "search the code with **Grep**", "Grep"),
        ("run git status", "run a shell command with **Bash** (you are asked first)", "Bash"),
        ("write notes.txt with hello", "create a file with **Write** (you are asked first)", "Write"),
    ]
    lines = [
        DEMO_HEADER
        + ("Hello! " if greeting else "")
        + "I'm agent-tui's built-in demo model, **not Claude**. I run on this machine with no "
        "account and no network, and follow a small script so you can see how the agent works: "
        "streaming answers, tool calls, permission prompts and the timeline.",
        "",
        "**Try:**",
    ]
    shown = [e for e in examples if e[2] in available] or examples[:4]
    lines.extend(f"- `{example}` — {what}" for example, what, _ in shown)
    if sum(1 for e in examples[:3] if e[2] in available) >= 2:
        lines.append("- `read README.md and search for TODO` — several tools at once, in parallel")
    lines += [
        "",
        "**Connect a real model:**",
        "- Claude: set `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`) and start agent-tui again.",
        "- A local model: set `ANTHROPIC_BASE_URL` to a server that speaks the Messages API "
        "(Ollama, llama.cpp `llama-server`, vLLM, LM Studio, LiteLLM) and pass `--model NAME`, "
        "e.g. `ANTHROPIC_BASE_URL=http://localhost:11434 agent-tui --model qwen3-coder`.",
    ]
    return "\n".join(lines)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
        text = "\n".join(parts)
    else:
        text = "" if content is None else str(content)
    text = re.sub(r"<system-reminder>.*?</system-reminder>", "", text, flags=re.DOTALL)
    return text.strip("\n")


def _fenced(lines: list[str], language: str = "") -> str:
    body = "\n".join(lines)
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def _more(total: int, shown: int, noun: str) -> str:
    left = total - shown
    return f"\n… and {left} more {noun}{'' if left == 1 else 's'}." if left > 0 else ""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


_NOTE_LINE = re.compile(r"^\s*[(\[].*[)\]]\s*$")
_NO_RESULTS = re.compile(r"^\s*no\s+(?:files|matches|results)\b", re.IGNORECASE)
_EXIT_CODE = re.compile(r"exit(?:ed)?(?:\s+with)?\s+code[:\s]+(-?\d+)", re.IGNORECASE)
_CAT_N = re.compile(r"^\s*(\d+)[\t→](.*)$")


def _summarize_one(block: dict[str, Any], use: dict[str, Any] | None) -> str:
    name = (use or {}).get("name") or "tool"
    data = (use or {}).get("input") or {}
    text = _result_text(block.get("content"))
    lines = text.splitlines()
    if name == "Bash":
        return _summarize_bash(str(data.get("command", "")), text, bool(block.get("is_error")))
    if block.get("is_error"):
        target = data.get("command") or data.get("file_path") or data.get("pattern")
        what = f"`{name}`" + (f" ({_code(str(target))})" if target else "")
        shown = [line for line in lines if line.strip()][:5] or ["(no details)"]
        return f"{what} returned an error:\n" + "\n".join(f"> {line}" for line in shown)
    if name == "Glob":
        pattern = str(data.get("pattern", "*"))
        files = [line for line in lines if line.strip() and not _NOTE_LINE.match(line)]
        if not files or (len(files) == 1 and _NO_RESULTS.match(files[0])):
            return f"No files matched {_code(pattern)}."
        head = f"I found {_plural(len(files), 'file')}" + (
            ":" if pattern in ("**/*", "*") else f" matching {_code(pattern)}:"
        )
        shown = files[:_LINES_SHOWN]
        return head + "\n" + "\n".join(f"- `{f.strip()}`" for f in shown) + _more(len(files), len(shown), "file")
    if name == "Read":
        path = str(data.get("file_path", "the file"))
        shown_path = os.path.basename(path) or path
        numbered = [_CAT_N.match(line) for line in lines]
        if lines and all(numbered):
            body = [m.group(2) for m in numbered if m]
        else:
            body = lines
        if not any(line.strip() for line in body):
            return f"{_code(shown_path)} is empty."
        shown = body[:_LINES_SHOWN]
        ext = os.path.splitext(path)[1].lstrip(".")
        language = {"py": "python", "md": "markdown", "js": "javascript", "ts": "typescript",
                    "rs": "rust", "sh": "bash", "yml": "yaml"}.get(ext, ext)
        return (
            f"Here are the first lines of {_code(shown_path)} ({_plural(len(body), 'line')} read):\n"
            + _fenced(shown, language)
            + _more(len(body), len(shown), "line")
        )
    if name == "Grep":
        pattern = str(data.get("pattern", ""))
        hits = [line for line in lines if line.strip() and not _NOTE_LINE.match(line)]
        if not hits or (len(hits) == 1 and _NO_RESULTS.match(hits[0])):
            return f"No matches for {_code(pattern)}."
        mode = data.get("output_mode", "files_with_matches")
        noun = "matching line" if mode == "content" else "file" if mode == "files_with_matches" else "line"
        shown = hits[:_LINES_SHOWN]
        return (
            f"I found {_plural(len(hits), noun)} for {_code(pattern)}:\n"
            + _fenced(shown)
            + _more(len(hits), len(shown), noun)
        )
    if name == "Write":
        path = str(data.get("file_path", "the file"))
        return f"Wrote {_code(os.path.basename(path) or path)}." + (f" {lines[0]}" if lines else "")
    shown = [line for line in lines if line.strip()][:_LINES_SHOWN]
    if not shown:
        return f"`{name}` finished with no output."
    return f"`{name}` returned:\n" + _fenced(shown) + _more(len(lines), len(shown), "line")


def _summarize_bash(command: str, text: str, is_error: bool) -> str:
    code_match = _EXIT_CODE.search(text)
    output = [line for line in text.splitlines() if not _EXIT_CODE.fullmatch(line.strip())]
    while output and not output[-1].strip():
        output.pop()
    while output and not output[0].strip():
        output.pop(0)
    if code_match:
        status = f"The command {_code(command)} exited with code {code_match.group(1)}"
    elif is_error:
        status = f"The command {_code(command)} failed"
    else:
        status = f"The command {_code(command)} exited with code 0"
    if not output:
        return status + " and printed nothing."
    shown = output[:_BASH_LINES_SHOWN]
    return status + (". Error output:\n" if is_error else ". Output:\n") + _fenced(shown) + _more(
        len(output), len(shown), "line"
    )


def _summarize_results(results: list[dict[str, Any]], uses: dict[str, dict[str, Any]]) -> str:
    parts = [_summarize_one(block, uses.get(block.get("tool_use_id", ""))) for block in results]
    errors = sum(1 for block in results if block.get("is_error"))
    if len(results) > 1:
        tail = f"All {len(results)} tools finished." if not errors else (
            f"{_plural(errors, 'tool')} of {len(results)} reported an error."
        )
        parts.append(tail)
    elif errors:
        parts.append("The tool reported an error, so there is nothing more to show.")
    return "\n\n".join(parts)


# ---------------------------------------------------------------- raw events


def _text_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "tool_use":
            return len(value.get("name", "")) + len(json.dumps(value.get("input", {})))
        if kind == "tool_result":
            return _text_chars(value.get("content"))
        if kind in ("thinking", "redacted_thinking"):
            return len(value.get("thinking", "") or value.get("data", ""))
        if "text" in value:
            return _text_chars(value["text"])
        if "content" in value:
            return _text_chars(value["content"])
    return 0


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def _text_pieces(text: str) -> list[str]:
    """Deltas of a few characters (about one or two tokens), joined back exactly."""
    return re.findall(r"\s*\S{1,6}|\s+", text)


def _json_pieces(raw: str) -> list[str]:
    return [raw[i : i + 12] for i in range(0, len(raw), 12)]


def _message_id(request: ModelRequest) -> str:
    digest = hashlib.sha256(
        json.dumps(
            [request.model, request.system, request.messages, [t.get("name") for t in request.tools]],
            sort_keys=True,
            default=str,
        ).encode("utf-8")
    ).hexdigest()
    return f"msg_demo_{digest[:24]}"


def _raw_events(request: ModelRequest, plan: DemoPlan) -> list[dict[str, Any]]:
    """The raw Messages-API events for `plan`, cut at `request.max_tokens`.

    Delta events carry a private `_chars` count used for pacing (removed
    before they reach the accumulator)."""
    input_tokens = _tokens(_text_chars(request.system) + _text_chars(request.messages) + len(json.dumps(request.tools)))
    budget = max(0, int(request.max_tokens)) * CHARS_PER_TOKEN
    events: list[dict[str, Any]] = [_message_start(request, input_tokens), {"type": "ping"}]
    used = 0
    cut = False
    index = 0
    if plan.text:
        text = plan.text
        if len(text) > budget:
            text, cut = text[:budget], True
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        events.extend(_delta(index, {"type": "text_delta", "text": piece}, piece) for piece in _text_pieces(text))
        events.append({"type": "content_block_stop", "index": index})
        used += len(text)
        index += 1
    for call in plan.tools:
        if cut or used >= budget:
            cut = True
            break
        raw = json.dumps(call.input, ensure_ascii=False)
        if used + len(raw) > budget:
            raw, cut = raw[: budget - used], True
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append(
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}
        )
        events.extend(
            _delta(index, {"type": "input_json_delta", "partial_json": piece}, piece) for piece in _json_pieces(raw)
        )
        events.append({"type": "content_block_stop", "index": index})
        used += len(raw)
        index += 1
    stop_reason = "max_tokens" if cut else "tool_use" if plan.tools else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": max(1, _tokens(used))},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _message_start(request: ModelRequest, input_tokens: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": _message_id(request),
            "type": "message",
            "role": "assistant",
            "model": request.model or DemoModel.name,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }


def _delta(index: int, delta: dict[str, Any], piece: str) -> dict[str, Any]:
    """A content_block_delta carrying `piece`, with its length for pacing."""
    return {"type": "content_block_delta", "index": index, "delta": delta, "_chars": len(piece)}
