"""Dataclasses' generated methods compiled once and kept in agent-tui's cache folder
(`agent_tui/code_cache.py`), and that folder kept from writes nobody approved, as the
settings folder is: by the policy and the danger checks (the sandbox: tests/test_sandbox.py)."""

from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path

import pytest

from agent_tui import code_cache
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.paths import own_dirs
from agent_tui.tools.bash import BashTool
from agent_tui.tools.sandbox import SandboxConfig
from agent_tui.tools.write import WriteTool
from tests.test_print_mode import env_for, run


@pytest.fixture
def fresh(monkeypatch):
    """No cache installed in this process before or after the test."""
    monkeypatch.setattr(code_cache, "_installed", None)
    yield
    code_cache.uninstall()


def make_point() -> type:
    @dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
    class Point:
        x: int
        y: int = 2
        label: str = "p"

    return Point


def test_a_dataclass_made_again_takes_its_methods_from_the_kept_code(tmp_path, fresh):
    first = code_cache.install(tmp_path)
    assert first is not None
    make_point()
    assert first.added >= 5  # __init__, __repr__, __eq__, __hash__, __setattr__, ...
    first.save()
    assert (tmp_path / code_cache.FILE_NAME).is_file()

    code_cache._installed = None  # as a new process would start
    second = code_cache.install(tmp_path)
    point = make_point()
    assert second is not first and second.added == 0, "a method was compiled again"
    p = point(x=1)
    assert (p.x, p.y, p.label) == (1, 2, "p")
    assert repr(p).endswith(".Point(x=1, y=2, label='p')")
    # Compiled as dataclasses compiles it: the annotations evaluated (this module's are strings).
    assert point.__init__.__annotations__ == {"x": "int", "y": "int", "label": "str", "return": None}
    assert p == point(x=1, y=2) and p != point(x=3) and hash(p) == hash(point(x=1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        point(1)  # keyword-only


def test_a_malformed_or_foreign_file_is_as_good_as_none(tmp_path, fresh):
    path = tmp_path / code_cache.FILE_NAME
    for content in (b"\x00garbage\xff", marshal.dumps(["not", "a", "dict"]), marshal.dumps({"text": 42})):
        path.write_bytes(content)
        code_cache._installed = None
        cache = code_cache.install(tmp_path)
        assert cache is not None and cache.codes == {}
        assert make_point()(x=4).x == 4
        assert cache.added >= 5


def test_a_relative_cache_folder_is_not_used(tmp_path, fresh, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert code_cache.install(Path("cache")) is None
    make_point()
    assert not (tmp_path / "cache").exists()


def test_past_the_limit_a_save_keeps_only_what_this_run_used(tmp_path, monkeypatch):
    cache = code_cache.CodeCache(tmp_path / code_cache.FILE_NAME)
    cache.codes = {f"x{n} = {n}": compile(f"x{n} = {n}", "<string>", "exec") for n in range(10)}
    monkeypatch.setattr(code_cache, "MAX_ENTRIES", 5)
    namespace: dict = {}
    cache.exec("x3 = 3", {}, namespace)
    cache.exec("y = 1", {}, namespace)
    assert namespace == {"x3": 3, "y": 1}
    cache.save()
    kept = marshal.loads((tmp_path / code_cache.FILE_NAME).read_bytes())
    assert set(kept) == {"x3 = 3", "y = 1"}


def test_the_installed_command_compiles_its_dataclasses_once(tmp_path):
    cache = tmp_path / "cache"
    env = env_for(None, AGENT_TUI_CACHE_DIR=str(cache))
    first = run(["-p", "hello"], tmp_path, env)
    assert first.returncode == 0, first.stderr
    kept = cache / code_cache.FILE_NAME
    written = kept.read_bytes()
    assert len(marshal.loads(written)) > 100  # Textual's and the engine's dataclasses
    stamp = kept.stat().st_mtime_ns
    second = run(["-p", "hello"], tmp_path, env)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert kept.stat().st_mtime_ns == stamp, "the second run compiled something the first had kept"


def test_writes_to_agent_tuis_own_folders_ask_in_every_mode(tmp_path, monkeypatch):
    for variable in ("AGENT_TUI_CONFIG_DIR", "AGENT_TUI_DATA_DIR", "AGENT_TUI_CACHE_DIR"):
        monkeypatch.setenv(variable, str(tmp_path / variable.lower()))
    project = tmp_path / "project"
    project.mkdir()
    bash = BashTool(SandboxConfig(enabled=False))
    for folder in own_dirs():
        target = folder / code_cache.FILE_NAME
        for mode in ("default", "acceptEdits", "bypassPermissions"):
            policy = PermissionPolicy(mode=mode, cwd=project, allow=["Write", "Bash"])
            for tool, call in ((WriteTool(), {"file_path": str(target), "content": "x"}),
                               (bash, {"command": f"echo x > {target}"}),
                               (bash, {"command": f"cp /dev/null {target}"})):
                decision = policy.decide(tool, call)
                assert decision.behavior == "ask", (mode, folder, call, decision)
                assert decision.danger and "agent-tui's own files" in decision.danger, decision
