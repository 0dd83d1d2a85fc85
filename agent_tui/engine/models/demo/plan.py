"""The demo model's answer to a request: tool calls for what it asks, or a summary of the results."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from agent_tui.engine.models.demo.init import init_step
from agent_tui.engine.models.stream import ModelRequest

from .requests import _code, parse_requests

DEMO_HEADER = "**Demo model (offline)** — "

_WORKDIR_LINE = re.compile(r"^[ \t]*Working directory:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)
_LINES_SHOWN = 10
_BASH_LINES_SHOWN = 15


def working_directory(system: str | list[dict[str, Any]]) -> str:
    """The `Working directory: <path>` line of a system prompt, else the process cwd."""
    text = system if isinstance(system, str) else "\n".join(
        b.get("text", "") for b in system if isinstance(b, dict)
    )
    match = _WORKDIR_LINE.search(text or "")
    return match.group(1) if match else os.getcwd()


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
