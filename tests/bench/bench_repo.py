"""Big-repository benchmark: Glob, Grep and Read on a generated 95,000-file tree, beside ripgrep alone.

    python -m tests.bench.bench_repo [--repeat N] [--files N] [--keep DIR]

The tree (made once per run under the system temp folder, or kept in `--keep DIR`):
a git repository with `--files` source files (default 45,000: Python, TypeScript,
Markdown) in nested packages, a `.gitignore`d `node_modules` of 50,000 more
(12,500 of them `.py`), and a 50 MB log.  Rows, each the median of `--repeat`
runs (default 7) and the ratio to its floor measured in the same run, A B A B
(the median of each run's ratio to the floor run beside it, so that load from
elsewhere, which comes and goes, weighs on both alike; the CPU ratios' range too):

- Glob `**/*.py` through the tool (the executor's ToolContext, the session's
  deny-rule check with and without a Read deny rule) vs `rg --files -g '**/*.py'`.
- Glob `node_modules/**/*.py` (a pattern into an ignored folder: listed, as
  Claude Code does) vs `rg --files node_modules -g '*.py'`.
- Grep `handler_7` with `glob: "*.py"` (files_with_matches) vs the same `rg -l`.
- For reference, ripgrep alone listing `**/*.py` newest first (`--sortr=modified`:
  a stat per file, in one thread) against its plain listing.
- Read of 100 lines at offset 400,000 of the 50 MB log: wall time and the peak
  RSS it adds (a child process per run, so one run's memory never hides another's).

Targets (issue "Scale"): Glob <= 2x ripgrep alone, Grep <= 1.3x, Read <= 20 MB of
extra RSS.  With `CLAUDE_CODE_BIN` set the Claude Code rows are not run here:
Claude Code's tools run inside its own process, which the print benchmark
times as whole turns (`bench_print.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LOG_BYTES = 50 * 1024 * 1024
NODE_FILES = 50_000


def make_tree(root: Path, files: int) -> Path:
    """The generated repository (reused when `root` already holds one of the same size)."""
    marker = root / ".bench-tree"
    if marker.exists() and marker.read_text() == str(files):
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("node_modules/\n*.log.old\n")
    exts = (".py", ".ts", ".md")
    for i in range(files):
        folder = root / "src" / f"pkg{i // 500:03d}" / f"mod{(i // 50) % 10}"
        if i % 50 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        body = f"def handler_{i}(request):\n    return render(request, {i})\n" * 3
        (folder / f"file{i}{exts[i % 3]}").write_text(body)
    for i in range(NODE_FILES):
        folder = root / "node_modules" / f"dep{i // 200:03d}" / "lib"
        if i % 200 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"index{i}{'.py' if i % 4 == 0 else '.js'}").write_text(f"module.exports = {i}\n")
    line = b"2026-12-01T00:00:00Z INFO request handled in 12 ms by worker 7 with status 200 and no errors\n"
    with open(root / "server.log", "wb") as fh:
        for _ in range(LOG_BYTES // len(line)):
            fh.write(line)
    marker.write_text(str(files))
    return root


def _median_ms(runs: list[float]) -> float:
    return statistics.median(runs) * 1000


def _rg() -> str:
    from agent_tui.tools.grep import find_rg

    rg = find_rg()
    if rg is None:
        sys.exit("ripgrep is not installed")
    return rg


def _cpu() -> float:
    """CPU seconds of this process and its finished children (ripgrep), user and system."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _measure(action: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `action`."""
    cpu, started = _cpu(), time.perf_counter()
    action()
    return time.perf_counter() - started, _cpu() - cpu


def _time_rg(args: list[str], cwd: Path) -> tuple[float, float]:
    return _measure(lambda: subprocess.run([_rg(), "--no-config", *args], cwd=cwd, stdout=subprocess.PIPE,
                                           check=False))


def _tool_runner(root: Path, deny: list[str]) -> Callable[[str, dict[str, Any]], Any]:
    """Runs a tool call as a session does: its ToolContext, its policy's deny-rule check."""
    from agent_tui.engine.permissions.policy import PermissionPolicy
    from agent_tui.tools.base import ToolContext, ToolResult
    from agent_tui.tools.registry import default_tools

    tools = {tool.name: tool for tool in default_tools()}
    policy = PermissionPolicy(cwd=root)
    for rule in deny:
        policy.add_rule(rule, behavior="deny", source="bench")

    async def run(name: str, input: dict[str, Any]) -> ToolResult:
        ctx = ToolContext(cwd=root, abort=asyncio.Event(), state={},
                          read_denied=policy.read_deny_check(root))
        assert await tools[name].validate(input, ctx) is None
        result = None
        async for item in tools[name].call(input, ctx):
            if isinstance(item, ToolResult):
                result = item
        assert result is not None and not result.is_error, result
        return result

    return lambda name, input: asyncio.run(run(name, input))


def _time_tool(run: Callable[[str, dict[str, Any]], Any], name: str, input: dict[str, Any]) -> tuple[float, float]:
    return _measure(lambda: run(name, input))


_READ_CHILD = """
import asyncio, json, resource, sys, time
from pathlib import Path
from agent_tui.tools.base import ToolContext, ToolResult
from agent_tui.tools.read import ReadTool
async def main():
    ctx = ToolContext(cwd=Path(sys.argv[1]), abort=asyncio.Event(), state={})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    async for item in ReadTool().call({"file_path": sys.argv[2], "offset": 400000, "limit": 100}, ctx):
        result = item
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert isinstance(result, ToolResult) and not result.is_error
    print(json.dumps({"wall": wall, "extra_kb": after - before}))
asyncio.run(main())
"""


def _read_once(root: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _READ_CHILD, str(root), str(root / "server.log")],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run(repeat: int, files: int, keep: Path | None) -> None:
    root = make_tree(keep or Path(tempfile.gettempdir()) / "agent-tui-bench" / "repo", files)
    plain = _tool_runner(root, [])
    denied = _tool_runner(root, ["Read(./secrets/**)", "Read(**/.env)"])
    Timed = Callable[[], tuple[float, float]]
    listing = ["--files", "--hidden", "-g", "!.git", "-g", "**/*.py"]
    rows: list[tuple[str, Timed, Timed, float | None]] = [
        ("Glob **/*.py", lambda: _time_tool(plain, "Glob", {"pattern": "**/*.py"}),
         lambda: _time_rg(listing, root), 2.0),
        ("Glob **/*.py, 2 Read deny rules", lambda: _time_tool(denied, "Glob", {"pattern": "**/*.py"}),
         lambda: _time_rg(listing, root), 2.0),
        ("Glob node_modules/**/*.py", lambda: _time_tool(plain, "Glob", {"pattern": "node_modules/**/*.py"}),
         lambda: _time_rg(["--files", "--hidden", "-g", "*.py", "node_modules"], root), 2.0),
        ("Grep handler_7 glob *.py", lambda: _time_tool(plain, "Grep", {"pattern": "handler_7", "glob": "*.py"}),
         lambda: _time_rg(["-l", "--hidden", "-g", "!.git", "-g", "*.py", "handler_7"], root), 1.3),
        # For reference: ripgrep itself putting the same listing newest first (a stat per file).
        ("(rg **/*.py --sortr=modified)", lambda: _time_rg([*listing, "--sortr=modified"], root),
         lambda: _time_rg(listing, root), None),
    ]
    print(f"tree: {files:,} files + {NODE_FILES:,} ignored + a 50 MB log; median of {repeat}, interleaved\n")
    print("ratio: the median of each run's ratio to the floor run beside it (pairs: min-max)\n")
    print(f"{'':36} {'wall ms':>21} {'':7} {'CPU ms (with rg)':>21}")
    print(f"{'row':36} {'agent-tui':>10} {'rg alone':>10} {'ratio':>7} {'agent-tui':>10} {'rg alone':>10} "
          f"{'ratio':>7} {'pairs':>11} {'target':>7}")
    for label, ours, floor, target in rows:
        a: list[tuple[float, float]] = []
        b: list[tuple[float, float]] = []
        ours()  # warm the page cache and the imports
        floor()
        for _ in range(repeat):
            a.append(ours())
            b.append(floor())
        wall_a, wall_b = _median_ms([w for w, _ in a]), _median_ms([w for w, _ in b])
        cpu_a, cpu_b = _median_ms([c for _, c in a]), _median_ms([c for _, c in b])
        walls = [x[0] / y[0] for x, y in zip(a, b, strict=True)]
        cpus = sorted(x[1] / max(y[1], 1e-6) for x, y in zip(a, b, strict=True))
        goal = f"{target:6.1f}x" if target is not None else "      -"
        print(f"{label:36} {wall_a:10.1f} {wall_b:10.1f} {statistics.median(walls):6.2f}x {cpu_a:10.1f} "
              f"{cpu_b:10.1f} {statistics.median(cpus):6.2f}x {cpus[0]:5.2f}-{cpus[-1]:<5.2f} {goal}")
    reads = [_read_once(root) for _ in range(max(3, repeat // 2))]
    wall = statistics.median(r["wall"] for r in reads) * 1000
    extra = max(r["extra_kb"] for r in reads) / 1024
    print(f"\nRead 100 lines at line 400,000 of the 50 MB log: {wall:.1f} ms, "
          f"peak RSS +{extra:.1f} MB (target <= 20 MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--files", type=int, default=45_000)
    parser.add_argument("--keep", type=Path, default=None, help="make (or reuse) the tree in this folder")
    args = parser.parse_args()
    run(args.repeat, args.files, args.keep)


if __name__ == "__main__":
    main()
