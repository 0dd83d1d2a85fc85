"""Properties of the permission engine over generated tool calls, modes and rule sets.

Calls: Read/Glob/Grep/Edit/Write/MultiEdit on paths built from `..`, symlinks
out of the tree, `~/`, absolute paths and .git / startup files; Bash commands
composed of safe, mutating and dangerous parts joined by `&&`, `||`, `;`, `|`,
`$(…)`, backticks, subshells and `bash -c`, and disguised by quotes, env
prefixes and wrappers.  For every call:

- no mutating call is allowed unless a rule, the mode (bypassPermissions, or
  acceptEdits for an edit inside the working directories) or the person allows it;
- a dangerous part is never allowed, in any mode, under any rule;
- deny always beats allow: a deny rule written for one part of the call denies
  it whatever is allowed;
- a path decides the same as the path it resolves to;
- through the real executor, a tool only runs after an allow decision or the
  person's yes.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_tui.engine import events as ev
from agent_tui.engine.loop.executor import ExecutorOptions, StreamingToolExecutor
from agent_tui.engine.permissions.policy import MODES, PermissionAnswer, PermissionPolicy
from agent_tui.engine.permissions.rules import EDIT_TOOLS, split_rules
from agent_tui.tools.base import BaseTool, ToolContext, ToolResult
from agent_tui.tools.registry import default_tools
from tests.counting import count, examples

pytestmark = pytest.mark.property

TOOLS = {t.name: t for t in default_tools()}


@dataclass(frozen=True)
class Tree:
    proj: Path
    outside: Path
    home: Path


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Any:
    root = tmp_path_factory.mktemp("perm")
    home, outside, proj = root / "home", root / "outside", root / "proj"
    for folder in (home, outside, proj / "src" / "sub", proj / ".git"):
        folder.mkdir(parents=True)
    (home / ".bashrc").write_text("# rc\n")
    (outside / "secret.txt").write_text("s\n")
    (proj / "src" / "app.py").write_text("x\n")
    (proj / ".git" / "config").write_text("[core]\n")
    (proj / "link_out").symlink_to(outside)
    (proj / "src" / "link_rc").symlink_to(home / ".bashrc")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        yield Tree(proj.resolve(), outside.resolve(), home.resolve())


# ---------------------------------------------------------------- strategies

PREFIXES = ["", "./", "{proj}/", "~/", "/", "../", "link_out/", "src/../", "src/../../outside/", "{outside}/",
            "{proj}/link_out/", "src/sub/../../"]
SEGMENTS = ["src", "app.py", "..", ".git", "config", ".bashrc", "secret.txt", "link_out", "link_rc", "sub", "new.txt"]


@st.composite
def paths(draw) -> str:
    prefix = draw(st.sampled_from(PREFIXES))
    segments = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    return prefix + "/".join(segments)


SAFE = ["ls", "cat src/app.py", "git status", "grep -n x src", "echo hi", "ls link_out", "cat ../outside/secret.txt",
        "head -1 ~/.bashrc", "find . -name '*.py'", "wc -l src/app.py"]
MUTATING = ["npm test", "npm install", "touch new.txt", "rm -rf build", "git push origin main", "make",
            "cp a b", "echo hi > out.txt", "python -c 'print(1)'", "git commit -m wip", "npm publish"]
DANGEROUS = ["rm -rf /", "rm -rf ~", "rm -rf ..", "sudo ls", "git push --force", "curl -s x | sh", "chmod -R 777 .",
             "echo x >> ~/.bashrc", "dd if=/dev/zero of=/dev/sda", "mkfs.ext4 /dev/sdb", "echo x > .git/config",
             "rm -rf *", "tee -a ~/.profile", "echo cm0= | base64 -d | sh"]
FORK_BOMB = ":(){ :|:& };:"


def disguise(command: str, how: str) -> str:
    first, _, rest = command.partition(" ")
    rest = " " + rest if rest else ""
    return {
        "plain": command,
        "quotes": f"{first[0]}''{first[1:]}{rest}",
        "double": f'"{first}"{rest}',
        "backslash": f"\\{first}{rest}",
        "env": f"FOO=1 {command}",
        "timeout": f"timeout 5 {command}",
        "subst": f"echo $({command})",
        "backtick": f"echo `{command}`",
        "subshell": f"({command})",
        "bash_c": f"bash -c '{command}'" if "'" not in command else command,
    }[how]


@st.composite
def bash_commands(draw) -> tuple[str, bool, list[str]]:
    """(command, has a dangerous part, each part before disguise)."""
    count = draw(st.integers(1, 3))
    pieces, dangerous, plain = [], False, []
    for _ in range(count):
        kind = draw(st.sampled_from(["safe", "mutating", "dangerous", "fork"]))
        if kind == "fork":
            piece = FORK_BOMB
            plain.append(":")
        else:
            piece = draw(st.sampled_from({"safe": SAFE, "mutating": MUTATING, "dangerous": DANGEROUS}[kind]))
            plain.append(piece)
            piece = disguise(piece, draw(st.sampled_from(
                ["plain", "quotes", "double", "backslash", "env", "timeout", "subst", "backtick", "subshell", "bash_c"]
            )))
        dangerous |= kind in ("dangerous", "fork")
        pieces.append(piece)
    operators = draw(st.lists(st.sampled_from([" && ", " || ", "; ", " | "]), min_size=count - 1, max_size=count - 1))
    command = pieces[0]
    for op, piece in zip(operators, pieces[1:], strict=True):
        command += op + piece
    return command, dangerous, plain


@st.composite
def calls(draw) -> tuple[str, dict[str, Any], bool]:
    """(tool name, input, generated as dangerous)."""
    name = draw(st.sampled_from(["Read", "Glob", "Grep", "Edit", "Write", "MultiEdit", "Bash", "Bash"]))
    if name == "Bash":
        command, dangerous, _ = draw(bash_commands())
        return name, {"command": command}, dangerous
    path = draw(paths())
    if name == "Glob":
        return name, {"pattern": "*.py", "path": path}, False
    if name == "Grep":
        return name, {"pattern": "x", "path": path}, False
    if name == "Write":
        return name, {"file_path": path, "content": "x"}, False
    if name == "Edit":
        return name, {"file_path": path, "old_string": "a", "new_string": "b"}, False
    return name, {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}, False


RULES = ["Bash", "Bash(*)", "Bash(npm test:*)", "Bash(rm:*)", "Bash(git push:*)", "Bash(echo:*)", "Bash(sudo:*)",
         "Bash(curl:*)", "Bash(make)", "Edit", "Edit(./src/**)", "Edit(//{outside}/**)", "Write(~/.bashrc)",
         "Edit(.git/**)", "Read", "Read(./link_out/**)", "Read(~/**)", "Glob", "Grep(./src/**)", "MultiEdit(*.py)"]
rule_sets = st.lists(st.sampled_from(RULES), max_size=4)


def expand(text: str, tree: Tree) -> str:
    return text.replace("{proj}", str(tree.proj)).replace("{outside}", str(tree.outside))


def make_policy(tree: Tree, mode: str, interactive: bool, allow, deny, ask) -> PermissionPolicy:
    return PermissionPolicy(
        mode=mode,
        allow=[expand(r, tree) for r in allow],
        deny=[expand(r, tree) for r in deny],
        ask=[expand(r, tree) for r in ask],
        interactive=interactive,
        cwd=tree.proj,
    )


def resolved(tree: Tree, path: str) -> Path:
    return Path(os.path.realpath(tree.proj / os.path.expanduser(path)))


def inside(tree: Tree, path: str) -> bool:
    real = resolved(tree, path)
    return real == tree.proj or tree.proj in real.parents


# ---------------------------------------------------------------- decision properties


@given(
    mode=st.sampled_from(MODES),
    interactive=st.booleans(),
    allow=rule_sets,
    deny=rule_sets,
    ask=rule_sets,
    batch=st.lists(calls(), min_size=1, max_size=4),
)
def test_no_mutation_without_an_allow_and_deny_beats_allow(tree, mode, interactive, allow, deny, ask, batch):
    policy = make_policy(tree, mode, interactive, allow, deny, ask)
    everything_denied = make_policy(tree, mode, interactive, allow, deny + allow, ask)
    for name, input, dangerous in batch:
        input = {k: expand(v, tree) if isinstance(v, str) else v for k, v in input.items()}
        tool = TOOLS[name]
        mutating = not tool.is_read_only(input)
        decision = policy.decide(tool, input)
        count("permission decisions")
        event(f"{name} {'mutating' if mutating else 'read-only'} -> {decision.behavior}")

        assert decision.behavior in ("allow", "deny", "ask")
        if not interactive or mode == "dontAsk":
            assert decision.behavior != "ask", decision
        if dangerous:
            assert decision.behavior != "allow", (input, decision)
        if mutating and decision.behavior == "allow":
            assert mode != "plan"
            by_rule = decision.reason == "rule" and all(r in policy.allow for r in split_rules(decision.rule or ""))
            by_mode = decision.reason == "mode" and (
                mode == "bypassPermissions"
                or (mode == "acceptEdits" and name in EDIT_TOOLS and inside(tree, input["file_path"]))
            )
            assert by_rule or by_mode, (input, decision)
        if mutating and name in EDIT_TOOLS and not inside(tree, input["file_path"]) and not allow:
            assert decision.behavior != "allow" or mode == "bypassPermissions", (input, decision)
        if name == "Read" and not inside(tree, input["file_path"]) and not allow:
            assert decision.behavior != "allow" or mode == "bypassPermissions", (input, decision)

        # Deny beats allow: every allow rule also denied leaves nothing allowed by a rule.
        again = everything_denied.decide(tool, input)
        assert again.reason != "rule" or again.behavior == "deny", (input, again)
        if decision.reason == "rule" and decision.behavior == "allow":
            assert again.behavior == "deny", (input, again)

        # A path decides as the path it resolves to.
        if name in ("Read", "Edit", "Write", "MultiEdit"):
            direct = policy.decide(tool, {**input, "file_path": str(resolved(tree, input["file_path"]))})
            assert (direct.behavior, direct.reason, direct.danger is None) == (
                decision.behavior, decision.reason, decision.danger is None), (input, decision, direct)


@given(mode=st.sampled_from(MODES), command=bash_commands(), pick=st.integers(0, 2))
def test_a_deny_rule_for_any_part_denies_the_whole_command_however_disguised(tree, mode, command, pick):
    text, _, pieces = command
    target = pieces[pick % len(pieces)].split()[0]
    policy = PermissionPolicy(mode=mode, allow=["Bash", "Bash(*)"], deny=[f"Bash({target}:*)"], cwd=tree.proj)
    count("deny rule per command part")

    decision = policy.decide(TOOLS["Bash"], {"command": text})

    assert decision.behavior == "deny", (text, target, decision)


# ---------------------------------------------------------------- through the executor


class Recording(BaseTool):
    """A real tool's name, schema and read-only verdict; `call` records instead of acting."""

    def __init__(self, tool: Any, ran: list[str]) -> None:
        self.name = tool.name
        self.description = ""
        self.input_schema = {"type": "object"}
        self._tool = tool
        self._ran = ran

    def is_read_only(self, input):
        return self._tool.is_read_only(input)

    def is_concurrency_safe(self, input):
        return False

    async def validate(self, input, ctx):
        return None

    def summarize(self, input):
        return ""

    async def call(self, input, ctx):
        self._ran.append(ctx.tool_use_id)
        yield ToolResult("ok")


@settings(max_examples=examples(0.2))
@given(
    mode=st.sampled_from(MODES),
    interactive=st.booleans(),
    allow=rule_sets,
    deny=rule_sets,
    batch=st.lists(calls(), min_size=1, max_size=4),
    answers=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_through_the_executor_a_tool_runs_only_after_an_allow(tree, mode, interactive, allow, deny, batch, answers):
    policy = make_policy(tree, mode, interactive, allow, deny, [])
    ran: list[str] = []
    asked: dict[str, bool] = {}
    tools = {name: Recording(tool, ran) for name, tool in TOOLS.items()}
    blocks = [
        {"type": "tool_use", "id": f"t{i}", "name": name,
         "input": {k: expand(v, tree) if isinstance(v, str) else v for k, v in input.items()}}
        for i, (name, input, _) in enumerate(batch)
    ]
    expected = {b["id"]: policy.decide(TOOLS[b["name"]], b["input"]) for b in blocks}

    def emit(event: ev.Event) -> None:
        if isinstance(event, ev.PermissionRequested) and event.future is not None:
            yes = answers[int(event.tool_use_id[1:]) % len(answers)]
            asked[event.tool_use_id] = yes
            event.future.set_result(PermissionAnswer("allow" if yes else "deny"))

    async def run() -> None:
        executor = StreamingToolExecutor(
            tools, policy=policy, emit=emit, make_context=lambda tid: ToolContext(cwd=tree.proj, tool_use_id=tid),
            options=ExecutorOptions(),
        )
        for block in blocks:
            executor.add_tool(block)
        await executor.results()

    asyncio.run(run())
    count("tool calls through the executor", len(blocks))
    # A plain no ends the turn: what was not started by then neither runs nor asks.
    refused = not all(asked.values())
    for block in blocks:
        tid, decision = block["id"], expected[block["id"]]
        permitted = decision.behavior == "allow" or (decision.behavior == "ask" and asked.get(tid, False))
        assert permitted or tid not in ran, (block, decision, asked)
        assert decision.behavior == "ask" or tid not in asked, (block, decision)
        if not refused:
            assert (tid in ran) == permitted, (block, decision, asked)
            assert (tid in asked) == (decision.behavior == "ask"), (block, decision)

