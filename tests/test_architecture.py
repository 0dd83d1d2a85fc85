"""The layout a newcomer can rely on, checked on the source (ast, no imports run).

Layers, lowest first: `shell` (bash analysis) and `config` import nothing else of
agent_tui; `tools` may use them; `engine` may use tools; the front ends (`tui`, `printer`,
`cli`) sit on top.  Every import counts: module-level, function-level, and those under
`if TYPE_CHECKING:` (an annotation that points back up is a cycle a reader follows too).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import agent_tui

PACKAGE = Path(agent_tui.__file__).parent
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, list[str], int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, [], node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        self.found.append((source, [a.name for a in node.names], node.lineno))


def _imports() -> list[Import]:
    """Every import of every module of agent_tui, resolved to module names (third-party kept as is)."""
    modules = _modules()
    out = []
    for module, path in modules.items():
        collector = _Collector(module, path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text(), str(path)))
        for source, names, line in collector.found:
            targets = [f"{source}.{n}" for n in names if f"{source}.{n}" in modules] or [source]
            out.extend(Import(module, t, line) for t in targets if t != module)
    return out


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _where(imports: list[Import]) -> str:
    return "\n".join(f"  {i.importer} (line {i.line}) imports {i.target}" for i in imports)


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_no_import_cycles() -> None:
    modules = set(_modules())
    edges: dict[str, set[str]] = {}
    for i in _imports():
        if i.target in modules:
            edges.setdefault(i.importer, set()).add(i.target)
    cycles = _cycles(edges)
    assert not cycles, "modules that import each other:\n" + "\n".join("  " + " <-> ".join(c) for c in cycles)


def test_the_engine_never_imports_the_tui_or_textual() -> None:
    bad = [
        i for i in _imports()
        if _in(i.importer, "agent_tui.engine") and _in(i.target, "agent_tui.tui", "textual", "agent_tui.cli",
                                                           "agent_tui.printer")
    ]
    assert not bad, "the engine is a library without a front end:\n" + _where(bad)


def test_tools_never_import_the_engine_or_the_tui() -> None:
    bad = [
        i for i in _imports()
        if _in(i.importer, "agent_tui.tools") and _in(i.target, "agent_tui.engine", "agent_tui.tui", "textual")
    ]
    assert not bad, "tools sit below the engine that runs them:\n" + _where(bad)


def test_shell_imports_nothing_else_of_agent_tui() -> None:
    bad = [
        i for i in _imports()
        if _in(i.importer, "agent_tui.shell") and _in(i.target, "agent_tui") and not _in(i.target, "agent_tui.shell")
    ]
    assert not bad, "agent_tui.shell is a leaf:\n" + _where(bad)


def test_no_function_is_longer_than_80_lines() -> None:
    long = []
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"  {path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them by step):\n" + "\n".join(long)


# Each front end and the engine modules it may import: the public surface (agent_tui.engine) and the events.
ENGINE_SURFACE = {"agent_tui.engine", "agent_tui.engine.events"}
FRONT_ENDS = {
    "the TUI": ("agent_tui.tui",),
    "print mode": ("agent_tui.printer", "agent_tui.claude_stream"),
    "the Agent SDK transport": ("agent_tui.sdk_transport",),
    "the ACP agent": ("agent_tui.acp_agent", "agent_tui.acp_updates", "agent_tui.acp_wire"),
    "agent_tui.ask()": ("agent_tui.scripting", "agent_tui.session_config"),
}


def _engine_modules_of(*packages: str) -> dict[str, list[Import]]:
    found: dict[str, list[Import]] = {}
    for i in _imports():
        if _in(i.importer, *packages) and _in(i.target, "agent_tui.engine"):
            found.setdefault(i.target, []).append(i)
    return found


def test_each_front_end_imports_at_most_two_engine_modules() -> None:
    """The public surface and the events: whatever else a front end needs is a Session method or an export
    of agent_tui.engine (docs/architecture.md §1)."""
    for name, packages in FRONT_ENDS.items():
        used = _engine_modules_of(*packages)
        beyond = [i for target, imports in used.items() if target not in ENGINE_SURFACE for i in imports]
        assert used, f"{name}: no engine import found (a module renamed?)"
        assert len(used) <= 2 and not beyond, f"{name} reaches past agent_tui.engine:\n" + _where(beyond)


def test_no_engine_or_tool_module_imports_config() -> None:
    """The settings object stays on the front end's side; the engine and the tools get typed values
    (SessionOptions' fields, SandboxConfig, the policy's rules) built from it there."""
    bad = [
        i for i in _imports()
        if _in(i.importer, "agent_tui.engine", "agent_tui.tools") and i.target == "agent_tui.config"
    ]
    assert not bad, "settings reach the engine through SessionOptions, not config:\n" + _where(bad)


def _attribute_chain(node: ast.expr) -> list[str]:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return names[::-1]


def test_front_ends_never_assign_the_sessions_state() -> None:
    """`session.x = ...` or `session.policy.mode = ...` from a front end: a change no event reports.
    The session's methods make the change and publish it (docs/architecture.md §5)."""
    modules = _modules()
    bad = []
    for packages in FRONT_ENDS.values():
        for module, path in modules.items():
            if not _in(module, *packages):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
                for target in targets:
                    if "session" in _attribute_chain(target)[:-1]:
                        bad.append(f"  {path.relative_to(PACKAGE.parent)}:{node.lineno} {ast.unparse(target)}")
    assert not bad, "front ends change the session through its methods:\n" + "\n".join(bad)
