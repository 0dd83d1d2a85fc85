"""argv -> Session -> the full-screen TUI, or print mode with `-p`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from . import __version__
from .engine.model import DEFAULT_MODEL
from .engine.permissions import MODES, PermissionPolicy


def split_tool_rules(values: list[str] | None) -> list[str]:
    """`--allowedTools "Read,Bash(git log:*)" Edit` -> ["Read", "Bash(git log:*)", "Edit"].

    Commas and spaces separate rules, except inside parentheses.
    """
    rules: list[str] = []
    for value in values or []:
        depth = 0
        current = ""
        for ch in value:
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agent-tui",
        description="A terminal coding agent. Without an API key it runs an offline demo model.",
    )
    p.add_argument("prompt", nargs="?", help="prompt to submit at start (with -p: the prompt to answer)")
    p.add_argument("-p", "--print", dest="print_mode", action="store_true", help="answer one prompt and exit")
    p.add_argument(
        "--output-format", choices=("text", "json", "stream-json"), default="text", help="print mode output"
    )
    p.add_argument("--model", help=f"model name (default: {DEFAULT_MODEL}, or the demo model offline)")
    p.add_argument("--max-turns", type=int, help="stop after this many model turns")
    p.add_argument("--allowedTools", "--allowed-tools", nargs="+", action="extend", dest="allowed_tools",
                   help='rules allowed without asking, e.g. "Read" "Bash(git log:*)"')
    p.add_argument("--disallowedTools", "--disallowed-tools", nargs="+", action="extend",
                   dest="disallowed_tools", help="rules that are always denied")
    p.add_argument("--permission-mode", choices=MODES, default="default")
    p.add_argument("--offline", action="store_true", help="use the offline demo model even if a key is set")
    p.add_argument("--theme", help="TUI theme name")
    p.add_argument("--cwd", type=Path, help="working directory (default: the current one)")
    p.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    return p


def choose_model(args: argparse.Namespace):
    has_credentials = bool(
        os.environ.get("ANTHROPIC_API_KEY")
        or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        or os.environ.get("ANTHROPIC_BASE_URL")
    )
    if args.offline or not has_credentials:
        from .engine.demo import DemoModel

        return DemoModel()
    from .engine.model import AnthropicModel

    return AnthropicModel(args.model or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cwd = (args.cwd or Path.cwd()).resolve()
    prompt = args.prompt
    if args.print_mode and prompt is None and not sys.stdin.isatty():
        prompt = sys.stdin.read()
    if args.print_mode and not (prompt or "").strip():
        print("agent-tui: -p needs a prompt (as an argument or on stdin)", file=sys.stderr)
        return 2

    from .engine.session import Session, SessionOptions
    from .tools.registry import default_tools

    policy = PermissionPolicy(
        mode=args.permission_mode,
        allow=split_tool_rules(args.allowed_tools),
        deny=split_tool_rules(args.disallowed_tools),
        interactive=not args.print_mode,
        local_settings_path=cwd / ".agent-tui" / "settings.local.json",
    )
    session = Session(
        model=choose_model(args),
        tools=default_tools(),
        cwd=cwd,
        policy=policy,
        options=SessionOptions(max_turns=args.max_turns),
    )
    if args.print_mode:
        from .printer import run_print

        try:
            return asyncio.run(run_print(session, prompt, args.output_format))
        except KeyboardInterrupt:
            return 130

    from .tui.app import run_tui

    return run_tui(session, initial_prompt=prompt, theme=args.theme)


if __name__ == "__main__":
    sys.exit(main())
