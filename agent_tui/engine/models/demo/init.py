"""The demo model's `/init`: look at the repository with Glob and Read, then Write an AGENTS.md.

It works only from what its tool calls returned (the file list, the README),
as a real model would, so the file it writes describes the repository it ran in.
"""

from __future__ import annotations

import os
import re
from typing import Any

# A phrase of the `/init` prompt (tui/commands.py INIT_PROMPT) that marks the request.
INIT_MARKER = "create an AGENTS.md file"
README_NAMES = ("README.md", "README.rst", "README.txt", "README")

# Build and test commands suggested by the files a project has at its root.
_COMMANDS: tuple[tuple[str, list[tuple[str, str]]], ...] = (
    ("pyproject.toml", [("Install (editable, with test extras)", "pip install -e '.[test]'"),
                        ("Run the tests", "python -m pytest")]),
    ("setup.py", [("Install", "pip install -e ."), ("Run the tests", "python -m pytest")]),
    ("package.json", [("Install", "npm install"), ("Run the tests", "npm test")]),
    ("Cargo.toml", [("Build", "cargo build"), ("Run the tests", "cargo test")]),
    ("go.mod", [("Build", "go build ./..."), ("Run the tests", "go test ./...")]),
    ("Makefile", [("Build", "make"), ("Run the tests", "make test")]),
)
_NUMBERED = re.compile(r"^\s*\d+\t", re.M)


def init_step(messages: list[dict[str, Any]], cwd: str) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    """(text, tool calls) for the next step of an `/init` request; None when none is under way
    or it is done (the Write's result is then summarised as any other)."""
    start = _init_request(messages)
    if start is None:
        return None
    uses, results = _since(messages[start + 1 :])
    if not uses:
        calls: list[tuple[str, dict[str, Any]]] = [("Glob", {"pattern": "**/*"})]
        readme = next((n for n in README_NAMES if os.path.isfile(os.path.join(cwd, n))), None)
        if readme:
            calls.append(("Read", {"file_path": os.path.join(cwd, readme)}))
        return "I'll look at the repository's files and its README, then write AGENTS.md.", calls
    if any(u.get("name") == "Write" for u in uses.values()):
        return None
    files: list[str] = []
    readme_text = ""
    for result in results:
        use = uses.get(result.get("tool_use_id", ""), {})
        text = _text(result.get("content"))
        if result.get("is_error"):
            continue
        if use.get("name") == "Glob":
            files = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("(")]
        elif use.get("name") == "Read":
            readme_text = _NUMBERED.sub("", text)
    content = agents_md(cwd, files, readme_text)
    return (
        f"The repository has {len(files)} files listed; writing AGENTS.md with its layout and commands.",
        [("Write", {"file_path": os.path.join(cwd, "AGENTS.md"), "content": content})],
    )


def agents_md(cwd: str, files: list[str], readme: str) -> str:
    """An AGENTS.md from a file list (paths, absolute or relative to `cwd`) and a README's text."""
    top: dict[str, int] = {}
    for path in files:
        rel = os.path.relpath(path, cwd) if os.path.isabs(path) else path
        if rel.startswith(".."):
            continue
        head, _, rest = rel.partition(os.sep)
        key = head + ("/" if rest else "")
        top[key] = top.get(key, 0) + 1
    lines = [
        "# AGENTS.md",
        "",
        "This file guides coding agents (agent-tui, Claude Code and others) working in this repository.",
        "",
        "## Project",
        "",
        _summary(readme) or f"`{os.path.basename(cwd.rstrip(os.sep))}` has no README yet; describe the project here.",
        "",
        "## Layout",
        "",
    ]
    for name in sorted(top, key=lambda n: (not n.endswith("/"), n.lower())):
        count = top[name]
        lines.append(f"- `{name}`" + (f" ({count} files)" if name.endswith("/") else ""))
    if not top:
        lines.append("- (no files found)")
    commands = [c for marker, found in _COMMANDS if marker in top for c in found]
    lines += ["", "## Commands", ""]
    if commands:
        seen: set[str] = set()
        for what, command in commands:
            if command not in seen:
                seen.add(command)
                lines.append(f"- {what}: `{command}`")
    else:
        lines.append("- No build or test configuration was found at the root; add the commands here.")
    lines += [
        "",
        "## Notes",
        "",
        "- Written by agent-tui's offline demo model from the file list and README: add the conventions,",
        "  architecture and pitfalls a newcomer needs.",
        "",
    ]
    return "\n".join(lines)


def _summary(readme: str) -> str:
    """The README's first paragraph that is not a heading, badge or code."""
    paragraph: list[str] = []
    for raw in readme.splitlines():
        line = raw.strip()
        if not line:
            if paragraph:
                break
            continue
        if line.startswith(("#", "![", "[![", "```", "<", "=", "-" * 3)):
            if paragraph:
                break
            continue
        paragraph.append(line)
    return " ".join(paragraph)[:600]


def _init_request(messages: list[dict[str, Any]]) -> int | None:
    """Index of the last user message with typed text, when it is an `/init` request."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        text = _text(message.get("content"))
        if not text.strip():
            continue
        return index if INIT_MARKER in text else None
    return None


def _since(messages: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The tool_use blocks (by id) and the latest tool_result blocks after the request."""
    uses: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        if message.get("role") == "assistant":
            uses.update({b.get("id", ""): b for b in blocks if b.get("type") == "tool_use"})
        else:
            found = [b for b in blocks if b.get("type") == "tool_result"]
            if found:
                results = found
    return uses, results


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""
