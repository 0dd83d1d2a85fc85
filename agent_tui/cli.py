"""argv -> Session -> the full-screen TUI, or print mode with `-p`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__, startup
from .config import LOCAL_SETTINGS, MCP_JSON, PERMISSION_MODES, Settings, SettingsError, apply_env, load_settings
from .engine.models.base import DEFAULT_MODEL
from .paths import data_dir_problem

# The engine (session, loop, tools, permissions) is imported where it is used: the
# full-screen app draws its first frame before it loads (`tui.start.SessionStart`).
if TYPE_CHECKING:
    from collections.abc import Callable

    from .engine.models.base import ModelClient
    from .engine.permissions.policy import PermissionPolicy
    from .engine.session import Session, SessionOptions
    from .engine.store import SessionInfo, Transcript
    from .tui.start import SessionStart


def split_tool_rules(values: list[str] | None) -> list[str]:
    """`--allowedTools "Read,Bash(git log:*)" Edit` -> ["Read", "Bash(git log:*)", "Edit"]."""
    from .engine.permissions.rules import split_rules

    return [rule for value in values or [] for rule in split_rules(value)]


HELP_EPILOG = """\
environment:
  ANTHROPIC_API_KEY    the key for Claude (without a key the offline demo model answers)
  ANTHROPIC_BASE_URL   another Messages-API server (Ollama, llama.cpp, vLLM, LiteLLM, a proxy)
  OPENAI_API_KEY       the key for an OpenAI-compatible server (provider "openai" in settings;
                       OPENAI_BASE_URL its address)

keys in the full screen:
  Enter send · Ctrl+J or \\ then Enter newline · Esc stop · Ctrl+C twice quit
  Shift+Tab permission mode · Ctrl+O open a tool's output (then ↑/↓ walk the tool rows)
  Ctrl+T timeline · Ctrl+P commands · / slash commands · @ files (/help lists them all)"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and where the flags are listed, not the whole usage."""
        self.exit(2, f"{self.prog}: {message}\nagent-tui --help lists the flags.\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="agent-tui",
        description="A terminal coding agent. Without an API key it runs an offline demo model.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("prompt", nargs="?", help="prompt to submit at start (with -p: the prompt to answer)")
    p.add_argument("-p", "--print", dest="print_mode", action="store_true", help="answer one prompt and exit")
    p.add_argument(
        "--output-format", choices=("text", "json", "stream-json", "stream-events"), default="text",
        help="print mode output: stream-json is Claude Code's message stream (needs --verbose), "
             "stream-events the engine's own events",
    )
    p.add_argument("--verbose", action="store_true",
                   help="print mode: stream-json needs it; json then prints every message as an array")
    p.add_argument("--include-partial-messages", action="store_true", dest="include_partial",
                   help="stream-json: also print the API's stream events (text deltas) as stream_event lines")
    p.add_argument("--model", help=f"model name (default: {DEFAULT_MODEL}, or the demo model offline)")
    p.add_argument("--max-turns", type=int, help="stop after this many model turns")
    p.add_argument("--allowedTools", "--allowed-tools", nargs="+", action="extend", dest="allowed_tools",
                   help='rules allowed without asking, e.g. "Read" "Bash(git log:*)"')
    p.add_argument("--disallowedTools", "--disallowed-tools", nargs="+", action="extend",
                   dest="disallowed_tools", help="rules that are always denied")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES,
                   help="permission mode (default: from settings, else default)")
    p.add_argument("--offline", action="store_true", help="use the offline demo model even if a key is set")
    p.add_argument("--theme", help="TUI theme name")
    p.add_argument("--cwd", type=Path, help="working directory (default: the current one)")
    p.add_argument("--mcp-config", action="append", dest="mcp_config", metavar="FILE_OR_JSON",
                   help='MCP servers from a JSON file or string: {"mcpServers": {...}} (repeatable)')
    p.add_argument("--settings", metavar="FILE_OR_JSON",
                   help="a settings file (or JSON object) above the user, project and local settings")
    p.add_argument("-c", "--continue", dest="continue_session", action="store_true",
                   help="continue the latest conversation in this directory")
    p.add_argument("-r", "--resume", nargs="?", const="", metavar="ID",
                   help="resume a conversation by id (without an id: choose from a list)")
    p.add_argument("--fallback-model", metavar="MODEL",
                   help="switch to this model after three overloaded errors in a row")
    p.add_argument("--thinking", metavar="off|adaptive|TOKENS",
                   help="extended thinking: off, adaptive (the model decides), or a token budget")
    p.add_argument("--max-budget-tokens", type=int, metavar="N",
                   help="output tokens one prompt may spend; past 90%% the model is told to wrap up")
    _add_program_flags(p)
    p.add_argument("--version", action="version", version=f"agent-tui {__version__}")
    return p


def _add_program_flags(p: argparse.ArgumentParser) -> None:
    """Claude Code's flags that programs (Claude's Agent SDK) pass."""
    p.add_argument("--acp", action="store_true",
                   help="serve the Agent Client Protocol on stdin/stdout, for editors (Zed, Toad, ...)")
    p.add_argument("--input-format", choices=("text", "stream-json"), default="text",
                   help="stream-json: prompts and control messages on stdin, one JSON a line (the Agent SDK)")
    p.add_argument("--system-prompt", metavar="TEXT",
                   help="the system prompt in place of agent-tui's own (empty: none)")
    p.add_argument("--system-prompt-file", type=Path, metavar="FILE", help="the system prompt, from a file")
    p.add_argument("--append-system-prompt", metavar="TEXT", help="text added at the end of the system prompt")
    p.add_argument("--permission-prompt-tool", metavar="TOOL",
                   help="stdio: permission questions go to the program on stdin/stdout (can_use_tool)")
    p.add_argument("--add-dir", action="append", dest="add_dirs", type=Path, metavar="DIR",
                   help="another directory the tools may work in (repeatable)")
    p.add_argument("--session-id", metavar="UUID", help="the id of the new session")
    p.add_argument("--fork-session", action="store_true",
                   help="with --resume or --continue: go on as a new session with a copy of the history")
    p.add_argument("--setting-sources", metavar="user,project,local",
                   help="which settings files to read (default: all)")
    p.add_argument("--strict-mcp-config", action="store_true",
                   help="only the MCP servers of --mcp-config (not settings, not .mcp.json)")
    p.add_argument("--tools", metavar="NAMES", help='the tools offered: "default", "" (none) or "Read,Grep,..."')
    p.add_argument("--max-budget-usd", type=float, metavar="USD",
                   help="stop once the session has cost this much (before its next model request)")
    p.add_argument("--json-schema", metavar="SCHEMA",
                   help="a JSON Schema (an object) the answer must also match: the result's structured_output")
    p.add_argument("--replay-user-messages", action="store_true",
                   help="with --input-format stream-json: echo each prompt back with its uuid")
    p.add_argument("--rewind-files", metavar="USER_MESSAGE_UUID",
                   help="with --resume/--continue: put the files back as they were just before that prompt, and exit")
    p.add_argument("--init", action="store_true", help="with -p: run the Setup hooks (trigger init) first")
    p.add_argument("--init-only", action="store_true",
                   help="run the Setup hooks (trigger init) and the SessionStart hooks, then exit")
    p.add_argument("--maintenance", action="store_true",
                   help="with -p: run the Setup hooks (trigger maintenance) first")
    # Accepted for compatibility with what the SDK may pass; each says on stderr that it is ignored.
    for flag in ("--betas", "--max-thinking-tokens", "--effort", "--plugin-dir", "--task-budget",
                 "--resume-session-at", "--thinking-display"):
        p.add_argument(flag, dest="ignored_" + flag[2:].replace("-", "_"), metavar="VALUE", help=argparse.SUPPRESS)
    for flag in ("--include-hook-events", "--session-mirror"):
        p.add_argument(flag, dest="ignored_" + flag[2:].replace("-", "_"), action="store_true",
                       help=argparse.SUPPRESS)


def _say_ignored(args: argparse.Namespace) -> None:
    """An accepted flag that is not honoured says so."""
    for name, value in vars(args).items():
        if name.startswith("ignored_") and value not in (None, False):
            print(f"agent-tui: --{name[8:].replace('_', '-')} is not supported and was ignored", file=sys.stderr)
    if args.fork_session and not (args.continue_session or args.resume):
        print("agent-tui: --fork-session needs --resume or --continue; ignored", file=sys.stderr)
    if args.permission_prompt_tool not in (None, "stdio"):
        print(f"agent-tui: --permission-prompt-tool {args.permission_prompt_tool}: only stdio is supported; "
              "permission questions are denied", file=sys.stderr)


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The CLI flags as a settings layer (file spelling; only the flags given)."""
    flags: dict[str, Any] = {}
    for key, value in (
        ("model", args.model),
        ("maxTurns", args.max_turns),
        ("theme", args.theme),
        ("fallbackModel", args.fallback_model),
        ("thinking", args.thinking),
    ):
        if value is not None:
            flags[key] = value
    permissions: dict[str, Any] = {}
    if args.allowed_tools:
        permissions["allow"] = split_tool_rules(args.allowed_tools)
    if args.disallowed_tools:
        permissions["deny"] = split_tool_rules(args.disallowed_tools)
    if args.permission_mode:
        permissions["defaultMode"] = args.permission_mode
    if permissions:
        flags["permissions"] = permissions
    return flags


def choose_model(settings: Settings, offline: bool = False) -> ModelClient:
    """The demo model offline or without credentials; an OpenAI-compatible server, Bedrock or
    Vertex AI when the settings or the environment ask for them (the SDK is imported only for
    the last two); else the Messages API.  An unknown provider is a RuntimeError."""
    from .engine.models.facts import set_overrides
    from .engine.models.providers import chosen_provider

    settings.problems.extend(set_overrides(settings.models))
    provider = chosen_provider(settings.provider)
    if not offline and provider == "openai":
        from .engine.models.openai import DEFAULT_MODEL as OPENAI_MODEL
        from .engine.models.openai import OpenAIChatModel
        from .engine.models.providers import openai_base_url

        base_url = openai_base_url(settings.base_url, settings.sources.get("baseUrl", ""))
        return OpenAIChatModel(settings.model or OPENAI_MODEL, base_url=base_url, api_key_env=settings.api_key_env)
    if not offline and provider != "anthropic":
        from .engine.models.providers import ProviderModel

        return ProviderModel(provider, settings.model)
    has_credentials = bool(
        os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN") or settings.base_url
    )
    if offline or not has_credentials:
        from .engine.models.demo.model import DemoModel

        return DemoModel(requested=has_credentials)
    from .engine.models.anthropic import AnthropicModel

    return AnthropicModel(settings.model or DEFAULT_MODEL, base_url=settings.base_url)


def make_policy(settings: Settings, cwd: Path, interactive: bool) -> PermissionPolicy:
    """Rules from every layer, each kept with its source; the mode is the effective one
    (so the environment's AGENT_TUI_PERMISSION_MODE beats the flag, as for every key)."""
    from .engine.permissions.policy import PermissionPolicy
    from .engine.permissions.rules import Rule, unknown_tool_problem

    policy = PermissionPolicy.from_settings(
        settings.permission_layers,
        mode=settings.permissions.get("defaultMode"),
        cwd=cwd,
        interactive=interactive,
        local_settings_path=cwd / LOCAL_SETTINGS,
    )
    settings.problems.extend(f"permissions: {p}" for p in policy.problems)
    from .tools.registry import default_tools

    known = [tool.name for tool in default_tools(cwd)]
    for entry in policy.entries():
        problem = unknown_tool_problem(Rule.parse(entry.rule), known)
        if problem:
            settings.problems.append(f"permissions: {entry.source} ({entry.path or 'session'}): {problem}")
    return policy


def describe_sessions(sessions: list[SessionInfo], limit: int = 20) -> str:
    lines = []
    for n, info in enumerate(sessions[:limit], 1):
        when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        turns = f"{info.turn_count} prompt{'s' if info.turn_count != 1 else ''}"
        lines.append(f"{n:>3}. {info.session_id}  {when}  {turns:>10}  {info.first_prompt[:60]}")
    return "\n".join(lines)


def resume_session(session: Session, args: argparse.Namespace) -> int | None:
    """Load the conversation `-c` / `-r` asks for into `session`; an exit status on failure."""
    from .engine.store import list_sessions

    session_id = args.resume or None
    if args.resume == "":
        sessions = list_sessions(session.cwd)
        if not sessions:
            print(f"agent-tui: no conversation to resume in {session.cwd}", file=sys.stderr)
            return 1
        if args.print_mode or not sys.stdin.isatty():
            print("agent-tui: --resume needs a session id here; recent conversations:\n"
                  + describe_sessions(sessions), file=sys.stderr)
            return 2
        # The app opens on its session picker (/resume).
        return None
    loaded = _stored(lambda: session.resume(session_id, fork=args.fork_session), args, session.cwd)
    return loaded if isinstance(loaded, int) else None


def _stored(load: Callable[[], Transcript], args: argparse.Namespace, cwd: Path) -> Transcript | int:
    """`load()`'s stored session, its problems said on stderr; 1 when there is none to go on with."""
    from .engine.store import SessionNotFound

    try:
        transcript = load()
    except SessionNotFound as exc:
        what = "continue" if args.continue_session else "resume"
        print(f"agent-tui: cannot {what}: {exc} ({cwd})", file=sys.stderr)
        return 1
    for problem in transcript.problems:
        print(f"agent-tui: {problem}", file=sys.stderr)
    return transcript


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cwd = (args.cwd or Path.cwd()).resolve()
    if args.acp:
        return _serve_acp(args)
    prompt = args.prompt
    # A program on the other end of a pipe, as with Claude Code: print mode, not the full screen.
    args.print_mode = args.print_mode or args.init_only
    if not args.print_mode and (args.input_format == "stream-json" or not (sys.stdin.isatty() and sys.stdout.isatty())):
        args.print_mode = True
    program = args.input_format == "stream-json"
    if args.print_mode and not program and not args.init_only and prompt is None and not sys.stdin.isatty():
        prompt = sys.stdin.read()
    status = _flag_problem(args, prompt)
    if status is not None:
        return status
    unusable = data_dir_problem()
    if unusable is not None:
        print(f"agent-tui: {unusable}", file=sys.stderr)
        return 2
    _say_ignored(args)
    sources = None if args.setting_sources is None else {s.strip() for s in args.setting_sources.split(",")} - {""}
    try:
        settings = load_settings(cwd, settings_file=args.settings, flags=flag_settings(args), sources=sources)
    except SettingsError as exc:
        print(f"agent-tui: settings: {exc}", file=sys.stderr)
        return 2
    apply_env(settings)
    try:
        model = choose_model(settings, args.offline)
    except RuntimeError as exc:
        print(f"agent-tui: {exc}", file=sys.stderr)
        return 2
    if _first_frame_first(args, cwd):
        return _tui(args, prompt, settings, _session_start(args, cwd, settings, model))
    if _last_screen_first(args, cwd):
        start = _resumed_start(args, cwd, settings, model)
        return start if isinstance(start, int) else _tui(args, prompt, settings, start)
    if args.print_mode:
        for problem in settings.problems:
            print(f"agent-tui: settings: {problem}", file=sys.stderr)
    built = build_session(args, cwd, settings, model)
    if isinstance(built, int):
        return built
    session, pending = built
    if args.print_mode:
        for problem in session.hooks.problems:  # an event agent-tui does not run, a malformed entry
            print(f"agent-tui: settings: {problem}", file=sys.stderr)
    if args.continue_session or args.resume is not None:
        status = resume_session(session, args)
        if status is not None:
            return status
    if args.rewind_files is not None:
        return _rewind_files(session, args.rewind_files)
    if program:
        return _serve_program(session, args, prompt)
    if args.init_only:
        return _init_only(session)
    if args.print_mode:
        return _print(session, args, prompt or "")
    return _tui(args, prompt, settings, session, pending)


def _init_only(session: Session) -> int:
    """`--init-only`: the Setup hooks (trigger init) and the SessionStart hooks, no prompt."""

    async def init() -> int:
        try:
            await session.setup("init", start=True)
        finally:
            await session.aclose()
        return 0

    return asyncio.run(init())


def _first_frame_first(args: argparse.Namespace, cwd: Path) -> bool:
    """Whether the app may draw before the session is made: nothing left can fail before the
    full screen (a bad --mcp-config, a session to resume), and no question comes up first.

    A `.mcp.json` asks its y / a / n question before the session starts: it is up from the
    first frame, never popping up over a prompt being typed (whose letters would answer it)."""
    return not (
        args.print_mode or args.continue_session or args.resume is not None or args.mcp_config
        or (cwd / MCP_JSON).exists()
    )


def _last_screen_first(args: argparse.Namespace, cwd: Path) -> bool:
    """Whether the full screen resumes a stored session (`-c`, `-r ID`) whose last screen it may
    draw before the engine loads: nothing else can fail first and no question comes up first."""
    resumes = args.continue_session or bool(args.resume)
    return resumes and not (
        args.print_mode or args.rewind_files is not None or args.mcp_config or (cwd / MCP_JSON).exists()
    )


def _resumed_start(args: argparse.Namespace, cwd: Path, settings: Settings,
                   model: ModelClient) -> SessionStart | int:
    """The stored session read (a missing one is an error before the full screen), and the session
    that goes on with it made after its last screen is drawn (docs/architecture.md §8)."""
    from .engine.store import find_session, load_transcript, project_dir
    from .tui.start import SessionStart

    transcript = _stored(lambda: load_transcript(find_session(project_dir(cwd), args.resume or None)), args, cwd)
    if isinstance(transcript, int):
        return transcript

    def build() -> tuple[Session, dict[str, dict]]:
        built = build_session(args, cwd, settings, model)
        if isinstance(built, int):  # (only --mcp-config fails here, and that start builds before the app)
            raise RuntimeError("the MCP configuration is invalid")
        session, pending = built
        session.resume(fork=args.fork_session, loaded=transcript)
        return session, pending

    return SessionStart(cwd, settings, model, _start_mode(settings), transcript.session_id, build,
                        resumed=transcript)


def _start_mode(settings: Settings) -> str:
    # The policy takes the merged defaultMode (the flag, the environment and the layers already applied).
    mode = settings.permissions.get("defaultMode")
    return mode if mode in PERMISSION_MODES else "default"


def _tui(args: argparse.Namespace, prompt: str | None, settings: Settings, session: Session | SessionStart,
         mcp_json_pending: dict[str, dict] | None = None) -> int:
    from .tui.app import run_tui

    if startup.end():
        return 130
    return run_tui(session, initial_prompt=prompt, theme=settings.theme, keymap=settings.keymap or None,
                   pick_session=args.resume == "", mcp_json_pending=mcp_json_pending, settings=settings)


def build_session(
    args: argparse.Namespace, cwd: Path, settings: Settings, model: ModelClient, session_id: str | None = None,
    *, interactive: bool | None = None,
) -> tuple[Session, dict[str, dict]] | int:
    """The session, and the `.mcp.json` servers still to approve; or an exit status.

    `interactive`: whether undecided calls ask; None: unless print mode, where only a program that
    answers (`--permission-prompt-tool stdio`) is asked."""
    if interactive is None:
        asks_program = args.input_format == "stream-json" and args.permission_prompt_tool == "stdio"
        interactive = not args.print_mode or asks_program
    policy = make_policy(settings, cwd, interactive=interactive)
    for directory in args.add_dirs or []:
        policy.add_directory(directory.expanduser().resolve())
    servers = _mcp_servers(args, cwd, settings)
    if isinstance(servers, int):
        return servers
    mcp_servers, pending = servers
    return _make_session(args, cwd, settings, policy, model, mcp_servers, session_id), pending


def _session_start(args: argparse.Namespace, cwd: Path, settings: Settings, model: ModelClient) -> SessionStart:
    """What the first frame shows, and the session made after it (with the id that frame shows)."""
    import uuid

    from .tui.start import SessionStart

    session_id = str(uuid.uuid4())

    def build() -> tuple[Session, dict[str, dict]]:
        built = build_session(args, cwd, settings, model, session_id)
        if isinstance(built, int):  # only --mcp-config fails here, and that start builds before the app
            raise RuntimeError("the MCP configuration is invalid")
        return built

    return SessionStart(cwd, settings, model, _start_mode(settings), session_id, build)


def _flag_problem(args: argparse.Namespace, prompt: str | None) -> int | None:
    """An exit status when the flags do not go together (or --json-schema is no schema)."""
    if args.json_schema is not None:
        from .tools.structured_output import schema_problem

        try:
            args.json_schema = json.loads(args.json_schema)
        except ValueError as exc:
            print(f"agent-tui: --json-schema: not JSON ({exc})", file=sys.stderr)
            return 2
        if problem := schema_problem(args.json_schema):
            print(f"agent-tui: --json-schema: {problem}", file=sys.stderr)
            return 2
    if args.input_format == "stream-json":
        if args.output_format != "stream-json":
            print("Error: --input-format=stream-json requires --output-format=stream-json", file=sys.stderr)
            return 1
        return None
    if args.rewind_files is not None:
        if not (args.continue_session or args.resume):
            print("Error: --rewind-files requires --resume (or --continue)", file=sys.stderr)
            return 2
        return None
    if args.print_mode and not args.init_only and not (prompt or "").strip():
        print("agent-tui: -p needs a prompt (as an argument or on stdin)", file=sys.stderr)
        return 2
    if args.print_mode and args.output_format == "stream-json" and not args.verbose:
        # Claude Code's rule, so a script that works with one works with the other.
        print("Error: When using --print, --output-format=stream-json requires --verbose", file=sys.stderr)
        return 1
    if args.include_partial and args.output_format != "stream-json":
        print("Error: --include-partial-messages requires --print and --output-format=stream-json", file=sys.stderr)
        return 1
    return None


def _mcp_servers(
    args: argparse.Namespace, cwd: Path, settings: Settings
) -> tuple[dict[str, Any] | None, dict[str, dict]] | int:
    """The MCP servers to start and the `.mcp.json` ones still to approve, or an exit status.

    Project servers from `.mcp.json` run once approved (the TUI asks; print mode never does)."""
    from .engine.claude_files import load_mcp_json, split_mcp_json

    mcp_json_problems: list[str] = []
    approved, pending = split_mcp_json(load_mcp_json(cwd, mcp_json_problems), settings)
    settings.problems.extend(mcp_json_problems)
    if args.print_mode:
        for problem in mcp_json_problems:
            print(f"agent-tui: {problem}", file=sys.stderr)
        if pending:
            print(f"agent-tui: .mcp.json server(s) not approved, not started: {', '.join(pending)} "
                  "(approve them in agent-tui, or list them in enabledMcpjsonServers)", file=sys.stderr)
    if args.strict_mcp_config:
        approved, pending = {}, {}
    configured = {} if args.strict_mcp_config else settings.mcp_servers
    mcp_servers = {**approved, **configured} if approved or args.strict_mcp_config else None
    if args.mcp_config:
        from .engine.mcp import load_mcp_config

        try:
            mcp_servers = {**approved, **configured, **load_mcp_config(args.mcp_config)}
        except ValueError as exc:
            print(f"agent-tui: invalid MCP configuration: {exc}", file=sys.stderr)
            return 2
    return mcp_servers, pending


def _make_session(args: argparse.Namespace, cwd: Path, settings: Settings, policy: PermissionPolicy,
                  model: ModelClient, mcp_servers: dict[str, Any] | None, session_id: str | None = None) -> Session:
    from .engine.session import Session
    from .tools.registry import default_tools
    from .tools.sandbox import SandboxConfig

    return Session(
        model=model,
        tools=_chosen_tools(default_tools(cwd, SandboxConfig.from_table(settings.sandbox)), args.tools),
        cwd=cwd,
        policy=policy,
        session_id=session_id or args.session_id,
        # Every value the settings decide is resolved here, once; the session reads its options only.
        options=session_options(
            settings,
            system_prompt=_system_prompt(args),
            append_system_prompt=args.append_system_prompt or "",
            max_budget_tokens=args.max_budget_tokens,
            max_budget_usd=args.max_budget_usd,
            json_schema=args.json_schema,
            mcp_servers=settings.mcp_servers or None if mcp_servers is None else mcp_servers,
            persist=True,
            checkpoints=takes_checkpoints(args.print_mode),
            # A one-shot print run ends before a watcher would pay off.
            watch_files=not args.print_mode,
        ),
    )


def takes_checkpoints(print_mode: bool) -> bool:
    """As Claude Code: the full screen takes checkpoints; print mode and the Agent SDK only when
    CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING is set (the SDK's `enable_file_checkpointing`);
    CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING turns them off everywhere."""
    def on(name: str) -> bool:
        return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")

    if on("CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING"):
        return False
    return not print_mode or on("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING")


def _rewind_files(session: Session, prompt_id: str) -> int:
    """`--rewind-files UUID`: the files of the resumed session as they were just before that prompt."""
    from .engine.checkpoints import CheckpointError, Checkpoints

    checkpoints = session.checkpoints or Checkpoints(session.cwd, session.session_id)
    checkpoint = checkpoints.find(prompt_id)
    if checkpoint is None:
        print(f"Error: --rewind-files requires a user message UUID, but '{prompt_id}' is not a user message "
              "in this session with a file checkpoint", file=sys.stderr)
        return 1
    try:
        files = checkpoints.restore_files(checkpoint)
    except (CheckpointError, OSError) as exc:
        print(f"Error: failed to rewind: {exc}", file=sys.stderr)
        return 1
    print(f"Files rewound to state at message {prompt_id} ({len(files)} file{'s' if len(files) != 1 else ''})")
    return 0


def session_options(settings: Settings, **overrides: Any) -> SessionOptions:
    """Every value the settings decide, resolved once on the front end's side (the engine never reads
    the settings object); `overrides` are the caller's own choices (flags, `ask()`'s options)."""
    from .engine import SessionOptions
    from .engine.context.window import CompactionSettings
    from .engine.loop.attempts import RetryPolicy

    values: dict[str, Any] = {
        "max_turns": settings.max_turns,
        "max_tokens": settings.max_output_tokens,
        "max_concurrency": settings.tools.get("maxConcurrency", 10),
        "context_window": settings.context_window,
        "retry": RetryPolicy(max_elapsed=settings.max_retry_seconds or RetryPolicy.max_elapsed),
        "hooks": settings.hooks,
        "env": settings.env,
        "settings_problems": settings.problems,
        "mcp_servers": settings.mcp_servers or None,
        "fallback_model": settings.fallback_model,
        "compaction": CompactionSettings.from_settings(settings.compaction),
        "prompt_caching": settings.prompt_caching,
        "thinking": settings.thinking,
        "effort": settings.effort,
    }
    values.update(overrides)
    return SessionOptions(**values)


def _chosen_tools(tools: list[Any], names: str | None) -> list[Any]:
    """`--tools`: None or "default" every tool; "" none; else the ones named."""
    if names is None or names.strip() == "default":
        return tools
    wanted = {name.strip() for name in names.split(",") if name.strip()}
    unknown = wanted - {tool.name for tool in tools}
    if unknown:
        print(f"agent-tui: --tools: no tool named {', '.join(sorted(unknown))}", file=sys.stderr)
    return [tool for tool in tools if tool.name in wanted]


def _system_prompt(args: argparse.Namespace) -> str | None:
    if args.system_prompt_file is not None:
        return args.system_prompt_file.read_text()
    return args.system_prompt


def _serve_program(session: Session, args: argparse.Namespace, prompt: str | None) -> int:
    """`--input-format stream-json`: a program drives the session over stdin and stdout (sdk_transport.py)."""
    from .sdk_transport import SdkTransport
    from .stdin_lines import StdinLines

    async def serve() -> int:
        transport = SdkTransport(session, sys.stdout, permission_prompt=args.permission_prompt_tool == "stdio",
                                 include_partial=args.include_partial, max_budget_usd=args.max_budget_usd,
                                 replay_user_messages=args.replay_user_messages)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, session.interrupt)
        try:
            return await transport.run(await StdinLines(sys.stdin).open(), first_prompt=prompt)
        finally:
            await session.aclose()

    if startup.end():
        return 130
    try:
        return asyncio.run(serve())
    except KeyboardInterrupt:
        return 130


def _serve_acp(args: argparse.Namespace) -> int:
    """`--acp`: an editor drives sessions over the Agent Client Protocol (acp_agent.py); each of its
    sessions is built for its folder as `agent-tui` would start there, with these flags."""
    from .acp_agent import serve_stdio

    _say_ignored(args)
    sources = None if args.setting_sources is None else {s.strip() for s in args.setting_sources.split(",")} - {""}

    def make_session(folder: Path) -> Session:
        """ValueError when the settings, the model or the MCP configuration cannot be used."""
        try:
            settings = load_settings(folder, settings_file=args.settings, flags=flag_settings(args), sources=sources)
            apply_env(settings)
            model = choose_model(settings, args.offline)
        except (SettingsError, RuntimeError) as exc:
            raise ValueError(str(exc)) from exc
        for problem in settings.problems:
            print(f"agent-tui: settings: {problem}", file=sys.stderr)
        built = build_session(args, folder, settings, model, interactive=True)
        if isinstance(built, int):
            raise ValueError("the MCP configuration is invalid")
        session, pending = built
        if pending:
            print(f"agent-tui: .mcp.json server(s) not approved, not started: {', '.join(pending)} "
                  "(approve them in agent-tui, or list them in enabledMcpjsonServers)", file=sys.stderr)
        return session

    if startup.end():
        return 130
    try:
        return asyncio.run(serve_stdio(make_session))
    except KeyboardInterrupt:
        return 130


def _print(session: Session, args: argparse.Namespace, prompt: str) -> int:
    """`-p`: one prompt (or a custom slash command), printed in the chosen format."""
    from .engine.claude_files import find_command
    from .printer import run_print

    allowed_tools: tuple[str, ...] = ()
    found = find_command(session.custom_commands, prompt)
    if found is not None:
        command, arguments = found
        prompt, allowed_tools = command.expand(arguments), command.allowed_tools

    async def print_and_close() -> int:
        nonlocal prompt
        if args.init or args.maintenance:
            await session.setup("init" if args.init else "maintenance")
        if found is not None and found[0].runs_shell:
            from .engine import CommandExpansionError

            try:
                prompt = await session.expand_command(*found)
            except CommandExpansionError as exc:
                print(f"agent-tui: {exc}", file=sys.stderr)
                await session.aclose()
                return 1
        terminated: list[bool] = []

        def on_sigterm() -> None:
            terminated.append(True)
            session.abort()

        # SIGTERM ends the turn like Ctrl+C, so `aclose` still kills background commands.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            try:  # `/mcp__server__prompt args`: the server's prompt is what is sent
                content = await session.expand_mcp_prompt(prompt) or prompt
            except ValueError as exc:
                print(f"agent-tui: {exc}", file=sys.stderr)
                return 1
            code = await run_print(session, content, args.output_format, verbose=args.verbose,
                                   include_partial=args.include_partial, allowed_tools=allowed_tools)
            return 128 + signal.SIGTERM if terminated else code
        finally:
            await session.aclose()

    if startup.end():
        return 130
    try:
        return asyncio.run(print_and_close())
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
