"""Searching and reading at scale: deny rules checked without a system call per file, a glob
into an ignored folder, a window of a big file read without loading it, results that cost
as few tokens as Claude Code's, and a data folder that cannot keep sessions refused at start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools import glob as glob_module
from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.file_state import HASH_LIMIT, MODIFIED_MESSAGE, check_writable
from agent_tui.tools.glob import GlobTool
from agent_tui.tools.grep import GrepTool
from agent_tui.tools.read import ReadTool
from tests.tool_call import call_tool

MB = 1024 * 1024


async def run(tool, input: dict, ctx: ToolContext) -> ToolResult:
    items = await call_tool(tool, input, ctx)
    assert isinstance(items[-1], ToolResult)
    return items[-1]


def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel in ("src/app.py", "src/.env", "secrets/key.py", "secrets/deep/more.py", "docs/readme.md",
                "node_modules/dep/lib/index.py", "node_modules/dep/lib/index.js", "build/gen.py", "top.py"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("node_modules/\nbuild/gen.py\n")
    return root


def test_the_deny_check_compiles_the_rules_once_and_makes_no_system_call_per_path(tmp_path, monkeypatch):
    root = project(tmp_path)
    policy = PermissionPolicy(cwd=root, deny=["Read(./secrets/**)", "Read(**/.env)", "Bash(rm:*)"])
    denied = policy.read_deny_check(root)
    assert denied is not None
    real = os.path.realpath(root)
    calls: list[str] = []
    for name in ("stat", "lstat"):
        original = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _o=original, _n=name, **k: (calls.append(_n), _o(*a, **k))[1])
    original_realpath = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda *a, **k: (calls.append("realpath"), original_realpath(*a, **k))[1])
    verdicts = {rel: denied(f"{real}/{rel}") for rel in
                ("secrets/key.py", "secrets/deep/more.py", "src/.env", "src/app.py", "top.py", "docs/readme.md")}
    monkeypatch.undo()
    assert calls == []
    assert verdicts == {"secrets/key.py": True, "secrets/deep/more.py": True, "src/.env": True,
                        "src/app.py": False, "top.py": False, "docs/readme.md": False}
    # No path rule for Read: nothing to check at all.
    assert PermissionPolicy(cwd=root, deny=["Read", "Bash(rm:*)"]).read_deny_check(root) is None


@pytest.mark.parametrize("content", ["./secrets/**", "**/.env", "build/", "*.key", "src/**/gen_*.py", "**",
                                     "a/*/c", "*/docs", "./x/**/y/", "**/[a-c]?.py", "s/**/", "a**/c", "***/c",
                                     "d[o/**", "**/gen_*"])
def test_one_match_per_path_answers_as_matching_each_of_its_folders_did(tmp_path, content):
    from agent_tui.engine.permissions.rules import path_pattern

    pattern = path_pattern(content, base_dir=str(tmp_path), cwd=str(tmp_path), home=str(tmp_path))
    assert pattern.below is not None
    body = pattern.below.pattern.removeprefix("(?:").removesuffix(")/[\\s\\S]*")  # the glob's own regex
    regex = re.compile(body)

    def per_folder(rel: str, is_dir: bool) -> bool:  # the definition: the path or a parent folder matches
        pieces = rel.split("/")
        return any(regex.fullmatch("/".join(pieces[:i])) and not (i == len(pieces) and pattern.dir_only and not is_dir)
                   for i in range(1, len(pieces) + 1))

    rels = ["secrets", "secrets/a", "secrets/deep/b.py", "src/.env", ".env", "build", "build/x.py", "a/build/y",
            "k.key", "d/k.key/z", "src/gen_1.py", "src/x/gen_2.py", "src/x/gen_2.py/q", "a/b/c", "a/b/c/d", "a/c",
            "docs", "docs/readme.md", "x/y", "x/p/y/z", "ab.py", "q/bc.py", "new\nline/.env", "s/\n/b.key"]
    for rel in rels:
        for is_dir in (False, True):
            assert pattern.matches(f"{pattern.root}/{rel}", is_dir) == per_folder(rel, is_dir), (rel, is_dir)


def test_the_joined_deny_regex_answers_as_each_rule_does(tmp_path):
    from agent_tui.engine.permissions.rules import path_pattern

    contents = ["./secrets/**", "**/.env", "build/", "./secrets", "./vault/", "*.key", "src/**/gen_*.py", "//etc/**",
                "a/*/c", "./x/**/y/", "**"]
    real = os.path.realpath(tmp_path)
    rels = ["secrets", "secrets/a", "secrets/deep/b.py", "src/.env", ".env", "build", "build/x.py", "vault",
            "vault/k", "k.key", "src/x/gen_2.py", "a/b/c", "a/b/c/d", "x/p/y/z", "x/y", "q.py", "new\nline/.env"]
    paths = [f"{real}/{rel}" for rel in rels] + [real, "/etc/passwd", "/etc", "/tmp"]
    for content in contents:
        policy = PermissionPolicy(cwd=tmp_path, deny=[f"Read({content})"])
        denied = policy.read_deny_check(tmp_path)
        assert denied is not None
        pattern = path_pattern(content, base_dir=real, cwd=real, home=real)
        for path in paths:
            assert denied(path) == pattern.matches(path, False), (content, path)


def test_a_block_of_found_paths_skips_the_deny_regex_only_when_no_path_in_it_is_covered(tmp_path):
    contents = ["./secrets/**", "**/.env", "build/", "./secrets", "./vault/", "*.key", "src/**/gen_*.py", "//etc/**",
                "a/*/c", "./x/**/y/", "**", "./a/b/**/*.key", "**/b/c"]
    real = os.path.realpath(tmp_path)
    rels = ["secrets", "secrets/a", "secrets/deep/b.py", "src/.env", ".env", "build", "build/x.py", "vault",
            "vault/k", "k.key", "src/x/gen_2.py", "a/b/c", "a/b/c/d", "x/p/y/z", "x/y", "q.py", "b/c", "c/d.key"]
    roots = [real, f"{real}/a", f"{real}/a/b", f"{real}/src", f"{real}/secrets", f"{real}/x/p", "/etc", "/"]
    for content in contents:
        denied = PermissionPolicy(cwd=tmp_path, deny=[f"Read({content})"]).read_deny_check(tmp_path)
        assert denied is not None
        for root in roots:
            folder = root.rstrip("/") + "/"
            for rel in rels:
                if denied(folder + rel):
                    assert denied.may_cover(folder, rel), (content, root, rel)
                    assert denied.may_cover(folder, "\n".join(["q.py", rel, "z"])), (content, root, rel)
    # The rules of a session that guards secrets pass over a block of ordinary source unchecked.
    denied = PermissionPolicy(cwd=tmp_path, deny=["Read(./secrets/**)", "Read(**/.env)"]).read_deny_check(tmp_path)
    assert denied is not None
    assert not denied.may_cover(real + "/", "src/app.py\nsrc/pkg/mod.py\ndocs/secrets.md")
    assert denied.may_cover(real + "/", "src/app.py\nsecrets/key.py")
    assert denied.may_cover(real + "/", "src/app.py\nsrc/.env")


@settings(max_examples=300, deadline=None)
@given(glob=st.lists(st.sampled_from(["a", "b", "/", ".", "*", "?", "**/", "[ab]", "[!a]"]), max_size=6).map("".join),
       path=st.text("ab/.", max_size=8))
def test_every_path_a_glob_matches_holds_its_literal(glob, path):
    from agent_tui.tools.globs import glob_literal, glob_to_regex

    if re.fullmatch(glob_to_regex(glob), path):
        assert glob_literal(glob) in path


@pytest.mark.parametrize("through_symlink", [False, True])
async def test_glob_and_grep_leave_out_what_a_read_deny_rule_covers(tmp_path, through_symlink):
    root = project(tmp_path)
    cwd = root
    if through_symlink:
        cwd = tmp_path / "link"
        cwd.symlink_to(root, target_is_directory=True)
    policy = PermissionPolicy(cwd=cwd, deny=["Read(./secrets/**)", "Read(**/.env)"])
    ctx = ToolContext(cwd=cwd, read_denied=policy.read_deny_check(cwd))
    globbed = await run(GlobTool(), {"pattern": "**/*"}, ctx)
    assert sorted(globbed.content.splitlines()) == [".gitignore", "docs/readme.md", "src/app.py", "top.py"]
    grepped = await run(GrepTool(), {"pattern": "needle"}, ctx)
    assert sorted(grepped.content.splitlines()[1:]) == ["docs/readme.md", "src/app.py", "top.py"]
    content = await run(GrepTool(), {"pattern": "needle", "output_mode": "content"}, ctx)
    assert "secrets" not in content.content and ".env" not in content.content


async def test_a_glob_naming_an_ignored_folder_lists_it_and_other_globs_still_skip_it(tmp_path):
    root = project(tmp_path)
    ctx = ToolContext(cwd=root)
    everywhere = await run(GlobTool(), {"pattern": "**/*.py"}, ctx)
    assert sorted(everywhere.content.splitlines()) == ["secrets/deep/more.py", "secrets/key.py", "src/app.py",
                                                       "top.py"]
    named = await run(GlobTool(), {"pattern": "node_modules/**/*.py"}, ctx)
    assert named.content.splitlines() == ["node_modules/dep/lib/index.py"]
    braces = await run(GlobTool(), {"pattern": "node_modules/**/index.{js,py}"}, ctx)
    assert sorted(braces.content.splitlines()) == ["node_modules/dep/lib/index.js", "node_modules/dep/lib/index.py"]
    # A file ignored by name stays out even though the pattern matches it.
    build = await run(GlobTool(), {"pattern": "build/*.py"}, ctx)
    assert build.content == "No files found"
    # A folder whose name reads like an option is still a folder.
    (root / "-v").mkdir()
    (root / "-v" / "opt.py").write_text("x")
    assert (await run(GlobTool(), {"pattern": "-v/*.py"}, ctx)).content == "-v/opt.py"
    # The repository's rules are not read for a folder git ignores (Claude Code applies none),
    # and still are for one it does not.
    assert await glob_module._parent_args(root / "node_modules") == ["--no-ignore-parent"]
    assert await glob_module._parent_args(root / "build") == []


@pytest.mark.parametrize("pattern", ["**/*.py", "src/*.{py,md}", "**/[a-s]*.py", "*", "**", "s?c/**",
                                     "**/deep/*", "node_modules/**", "a**b/*.py", "*/*.py", "{src,docs}/*",
                                     "**/{app,readme}.*", "src/**", "**/[!a]*.py", "**/x,y.py", "*/**/*.md"])
async def test_the_ripgrep_prefilter_lists_exactly_what_the_glob_matches(tmp_path, monkeypatch, pattern):
    root = project(tmp_path)
    (root / "src" / "notes.md").write_text("x")
    (root / "axxb").mkdir()
    (root / "axxb" / "q.py").write_text("x")
    (root / "src" / "x,y.py").write_text("x")
    (root / "logs").mkdir()
    (root / "logs" / ".gitignore").write_text("*\n!.gitignore\n")
    (root / "logs" / "run.log").write_text("x")
    ctx = ToolContext(cwd=root)
    fast = await run(GlobTool(), {"pattern": pattern}, ctx)
    monkeypatch.setattr(glob_module, "_rg_filter", lambda pattern, folder: glob_module._RgFilter([], exact=False))
    exact = await run(GlobTool(), {"pattern": pattern}, ctx)
    assert sorted(fast.content.splitlines()) == sorted(exact.content.splitlines())


async def test_whitelist_lines_of_a_gitignore_add_no_file_the_pattern_does_not_match(tmp_path):
    root = project(tmp_path)
    (root / "logs").mkdir()
    (root / "logs" / ".gitignore").write_text("*\n!.gitignore\n")
    (root / ".gitignore").write_text("node_modules/\nbuild/gen.py\n!*.md\n")
    listed = await run(GlobTool(), {"pattern": "**/*.py"}, ToolContext(cwd=root))
    assert sorted(listed.content.splitlines()) == ["secrets/deep/more.py", "secrets/key.py", "src/app.py", "top.py"]
    hidden = await run(GlobTool(), {"pattern": "**/.gitignore"}, ToolContext(cwd=root))
    assert sorted(hidden.content.splitlines()) == [".gitignore", "logs/.gitignore"]


async def test_ignore_files_above_the_search_root_apply_as_ripgrep_reads_them(tmp_path):
    outer = tmp_path / "outer"
    root = outer / "repo"
    for rel in ("a.py", "b.py", "src/c.py", "src/gen.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("gen.py\n")
    # At a repository's root nothing above it counts: ripgrep is told to look no further.
    assert glob_module._parents(root) == ["--no-ignore-parent"]
    listed = await run(GlobTool(), {"pattern": "**/*.py"}, ToolContext(cwd=root))
    assert sorted(listed.content.splitlines()) == ["a.py", "b.py", "src/c.py"]
    # ...except an .ignore file, which ripgrep honours above a repository too.
    (outer / ".ignore").write_text("b.py\n")
    assert glob_module._parents(root) == []
    listed = await run(GlobTool(), {"pattern": "**/*.py"}, ToolContext(cwd=root))
    assert sorted(listed.content.splitlines()) == ["a.py", "src/c.py"]
    # Below a repository's root its .gitignore still applies.
    assert glob_module._parents(root / "src") == []
    listed = await run(GlobTool(), {"pattern": "**/*.py"}, ToolContext(cwd=root / "src"))
    assert listed.content.splitlines() == ["c.py"]


async def test_glob_shows_the_newest_100_of_many_blocks_of_output_newest_first(tmp_path):
    names = [f"d{n // 40:02}/file_with_a_longish_name_{n:04}.py" for n in range(1200)]
    for n, rel in enumerate(names):
        path = tmp_path / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text("x")
        os.utime(path, (1_000_000 + (n * 7919) % 1200, 1_000_000 + (n * 7919) % 1200))
    result = await run(GlobTool(), {"pattern": "**/*.py"}, ToolContext(cwd=tmp_path))
    expected = sorted(names, key=lambda rel: (-os.stat(tmp_path / rel).st_mtime_ns, rel))[:100]
    assert result.content.splitlines()[:-1] == expected
    assert result.data["count"] == 1200 and result.data["truncated"]


async def test_reading_a_window_of_a_50_mb_file_never_loads_it_and_edits_still_see_changes(tmp_path):
    path = tmp_path / "server.log"
    line = b"2026-12-01 INFO request handled in 12 ms by worker 7\n"
    with open(path, "wb") as fh:
        for _ in range(50 * MB // len(line)):
            fh.write(line)
    assert path.stat().st_size > HASH_LIMIT
    ctx = ToolContext(cwd=tmp_path)
    tracemalloc.start()
    try:
        result = await run(ReadTool(), {"file_path": str(path), "offset": 400_000, "limit": 100}, ctx)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.is_error and result.content.startswith("400000\t2026-12-01 INFO")
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MiB"
    # Untouched, or only touched: it may be edited.  Changed (same size, new tail): it may not.
    assert check_writable(ctx.state, path) is None
    os.utime(path, (1_000, 1_000))
    assert check_writable(ctx.state, path) is None
    with open(path, "r+b") as fh:
        fh.seek(-len(line), os.SEEK_END)
        fh.write(line.replace(b"INFO", b"WARN"))
    os.utime(path, (2_000, 2_000))
    assert check_writable(ctx.state, path) == MODIFIED_MESSAGE


def _tokens(text: str) -> int:
    """A tokenizer-shaped count: words, numbers (in 3-digit pieces), runs of spaces, each other character."""
    return len(re.findall(r"[A-Za-z]+|\d{1,3}| +|\t|\n|[^\sA-Za-z\d]", text))


async def test_results_cost_no_more_tokens_than_claude_codes_for_the_same_fixtures(tmp_path):
    root = project(tmp_path)
    body = "".join(f"    value_{n} = compute({n})\n" for n in range(1, 301))
    (root / "src" / "big.py").write_text(body)
    ctx = ToolContext(cwd=root)
    real = os.path.realpath(root)
    read = await run(ReadTool(), {"file_path": str(root / "src" / "big.py")}, ctx)
    globbed = await run(GlobTool(), {"pattern": "**/*.py"}, ctx)
    grepped = await run(GrepTool(), {"pattern": "compute", "output_mode": "content"}, ctx)
    # Claude Code's forms of the same results: absolute paths, and (before 2.1) six-column line numbers.
    theirs = {
        "Read": "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(body.splitlines(), 1)),
        "Glob": "\n".join(f"{real}/{p}" for p in globbed.content.splitlines()),
        "Grep": "\n".join(f"{real}/{line}" for line in grepped.content.splitlines()),
    }
    ours = {"Read": read.content, "Glob": globbed.content, "Grep": grepped.content}
    for name in ours:
        assert _tokens(ours[name]) < _tokens(theirs[name]), name
    assert read.content.splitlines()[0] == "1\t    value_1 = compute(1)"


@pytest.mark.parametrize("env", [{"HOME": "relative-home"}, {"AGENT_TUI_DATA_DIR": "relative-data"},
                                 {"AGENT_TUI_DATA_DIR": "/proc/no-such-folder"}])
def test_a_data_folder_that_cannot_keep_sessions_is_a_start_up_error(tmp_path, env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI", "AGENT_TUI"))}
    environ.setdefault("HOME", str(tmp_path))
    environ.update(env)
    environ["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # this checkout's agent_tui
    done = subprocess.run([sys.executable, "-m", "agent_tui", "-p", "hello"], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "agent-tui: " in done.stderr and ("HOME" in done.stderr or "data folder" in done.stderr)
    assert not any(tmp_path.rglob("*.jsonl"))


@pytest.mark.parametrize(("glob", "matching", "not_matching"), [
    ("[!]", ["[!]"], ["a", "!"]),          # never closed: the characters themselves, as bash reads it
    ("[!]]", ["a", "x"], ["]"]),           # `]` right after `[!` is in the class
    ("[]a]", ["]", "a"], ["b"]),           # and right after `[`
    ("*.[!p]y", ["x.ay"], ["x.py"]),
    ("[!a]", ["b"], ["a"]),
])
def test_a_bracket_right_after_the_opening_of_a_class_is_a_member_not_its_end(glob, matching, not_matching):
    from agent_tui.tools.globs import glob_to_regex

    pattern = re.compile(glob_to_regex(glob))
    assert [p for p in matching if not pattern.fullmatch(p)] == []
    assert [p for p in not_matching if pattern.fullmatch(p)] == []


async def test_glob_answers_a_class_that_is_never_closed(tmp_path):
    import asyncio

    from agent_tui.tools.base import ToolContext
    from agent_tui.tools.glob import GlobTool

    (tmp_path / "a.py").write_text("")
    ctx = ToolContext(cwd=tmp_path, abort=asyncio.Event(), state={})
    results = [item async for item in GlobTool().call({"pattern": "[!]"}, ctx)]
    assert results[-1].content == "No files found" and not results[-1].is_error
