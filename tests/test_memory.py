"""Project memory: which files load, in what order, `@path` imports, and the block in requests."""

from __future__ import annotations

import pytest

from agent_tui.engine.memory import MAX_IMPORT_DEPTH, load_memory, memory_block
from tests.engine_helpers import make_session, system_text
from tests.loopback import reply, tool_use
from tests.test_print_mode import env_for, run


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    path = tmp_path / "user-config"
    path.mkdir()
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(path))
    return path


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "outside" / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_files_load_from_the_user_dir_then_the_repo_root_down_to_the_cwd(user_dir, repo):
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo.parent / "AGENTS.md").write_text("above the repository: not loaded")
    (user_dir / "AGENTS.md").write_text("user rules")
    (repo / "AGENTS.md").write_text("root agents")
    (repo / "CLAUDE.md").write_text("root claude")
    (repo / ".agent-tui").mkdir()
    (repo / ".agent-tui" / "AGENTS.md").write_text("root hidden")
    (repo / "pkg" / "CLAUDE.md").write_text("pkg claude")
    (cwd / "AGENTS.md").write_text("sub agents")

    memory = load_memory(cwd)

    assert [f.content for f in memory.files] == [
        "user rules", "root agents", "root claude", "root hidden", "pkg claude", "sub agents"]
    assert [f.scope for f in memory.files] == ["user", *["project"] * 5]


def test_outside_a_repository_only_the_cwd_is_read(user_dir, tmp_path):
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    (tmp_path / "a" / "AGENTS.md").write_text("parent")
    (cwd / "CLAUDE.md").write_text("here")

    assert [f.content for f in load_memory(cwd).files] == ["here"]


def test_imports_are_relative_to_the_importing_file_and_loaded_once(user_dir, repo):
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("style rules, see @../shared.md")
    (repo / "shared.md").write_text("shared rules @docs/style.md")
    (repo / "AGENTS.md").write_text("Follow @docs/style.md and @shared.md.\nMail me at me@example.com")

    memory = load_memory(repo)

    assert [(f.path.name, f.depth) for f in memory.files] == [("AGENTS.md", 0), ("style.md", 1), ("shared.md", 2)]
    assert memory.files[1].imported_from == repo / "AGENTS.md"
    assert [f.scope for f in memory.files] == ["project", "import", "import"]


def test_imports_stop_at_depth_five(user_dir, repo):
    for n in range(1, 8):
        (repo / f"level{n}.md").write_text(f"level {n} @level{n + 1}.md")
    (repo / "AGENTS.md").write_text("@level1.md")

    depths = [f.depth for f in load_memory(repo).files]

    assert depths == list(range(MAX_IMPORT_DEPTH + 1))


def test_imports_inside_code_are_ignored(user_dir, repo):
    (repo / "real.md").write_text("real")
    (repo / "code.md").write_text("code")
    (repo / "AGENTS.md").write_text("@real.md\n```\n@code.md\n```\nInline `@code.md` too.")

    assert [f.path.name for f in load_memory(repo).files] == ["AGENTS.md", "real.md"]


def test_the_block_is_delimited_and_names_each_file(user_dir, repo):
    (repo / "AGENTS.md").write_text("Use tabs.")

    block = memory_block(repo)

    assert block.startswith("<memory>") and block.endswith("</memory>")
    assert f'<memory-file path="{repo / "AGENTS.md"}" scope="project">\nUse tabs.\n</memory-file>' in block
    assert load_memory(user_dir).block() == ""


async def test_every_request_carries_the_memory_block_in_the_system_prompt(api, user_dir, repo):
    (user_dir / "AGENTS.md").write_text("Answer in English.")
    (repo / "AGENTS.md").write_text("Run the tests with `make check`.")
    api.push(reply(tool_use("Glob", {"pattern": "*.md"})), reply("done"))
    session = make_session(api.url, repo)

    await session.submit("hello")

    block = memory_block(repo)
    assert [block in system_text(r.body) for r in api.requests] == [True, True]
    assert "Answer in English." in block and "make check" in block
    assert [f.path for f in session.memory.files] == [user_dir / "AGENTS.md", repo / "AGENTS.md"]
    assert not any("make check" in str(m) for m in api.requests[0].body["messages"])


async def test_reload_memory_replaces_the_block(api, user_dir, repo):
    (repo / "AGENTS.md").write_text("old rule")
    api.push(reply("ok"))
    session = make_session(api.url, repo)

    (repo / "AGENTS.md").write_text("new rule")
    session.reload_memory()
    await session.submit("hi")

    system = system_text(api.requests[0].body)
    assert "new rule" in system and "old rule" not in system


def test_print_mode_sends_the_memory_files(api, tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Always answer in haiku.")
    api.push(reply("ok"))

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert "Always answer in haiku." in system_text(api.requests[0].body)
