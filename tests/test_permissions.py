"""The permission engine: modes, rule syntax, paths, working directories, settings layers and /permissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy, RuleEntry, SettingsLayer
from agent_tui.engine.permissions.rules import Rule
from agent_tui.tools.bash import BashTool
from agent_tui.tools.edit import EditTool
from agent_tui.tools.glob import GlobTool
from agent_tui.tools.grep import GrepTool
from agent_tui.tools.read import ReadTool
from agent_tui.tools.sandbox import SandboxConfig
from agent_tui.tools.write import WriteTool
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import reply, tool_use

READ, WRITE, EDIT, BASH, GLOB, GREP = ReadTool(), WriteTool(), EditTool(), BashTool(), GlobTool(), GrepTool()


class FakeTool:
    def __init__(self, name: str, read_only: bool = False) -> None:
        self.name = name
        self._read_only = read_only

    def is_read_only(self, input):
        return self._read_only


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """proj/ (the working directory) with src/, a symlink out of the tree and one into a home startup file."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    (home / "notes").mkdir()
    monkeypatch.setenv("HOME", str(home))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n")
    proj = tmp_path / "proj"
    (proj / "src" / "pkg").mkdir(parents=True)
    (proj / "src" / "app.py").write_text("x = 1\n")
    (proj / "src" / "pkg" / ".env").write_text("K=V\n")
    (proj / "link_out").symlink_to(outside)
    (proj / "src" / "escape").symlink_to(outside)
    (proj / "rc").symlink_to(home / ".bashrc")
    return proj


def write(path: str) -> dict:
    return {"file_path": path, "content": "x"}


def edit(path: str) -> dict:
    return {"file_path": path, "old_string": "a", "new_string": "b"}


# ---------------------------------------------------------------- modes


def test_default_mode_allows_reads_inside_and_asks_for_edits(tree):
    p = PermissionPolicy(cwd=tree)

    assert p.decide(READ, {"file_path": "src/app.py"}).behavior == "allow"
    decision = p.decide(EDIT, edit("src/app.py"))
    assert decision.behavior == "ask" and decision.suggested_rule == "Edit(./src/**)"


def test_accept_edits_allows_edits_inside_but_not_outside(tree):
    p = PermissionPolicy(mode="acceptEdits", cwd=tree)

    assert p.decide(EDIT, edit("src/app.py")).behavior == "allow"
    assert p.decide(WRITE, write("src/new.py")).behavior == "allow"
    outside = p.decide(WRITE, write(str(tree.parent / "outside" / "x.txt")))
    assert outside.behavior == "ask" and "outside the working directories" in outside.message
    assert outside.suggested_rule == f"Edit(/{tree.parent / 'outside'}/**)"


def test_plan_mode_denies_changes_and_tells_the_model_why(tree):
    p = PermissionPolicy(mode="plan", allow=["Edit", "Bash"], cwd=tree)

    decision = p.decide(EDIT, edit("src/app.py"))
    assert decision.behavior == "deny"
    assert "plan mode" in decision.message and "present your plan with ExitPlanMode" in decision.message
    assert p.decide(BASH, {"command": "npm install"}).behavior == "deny"
    assert p.decide(BASH, {"command": "git log -3"}).behavior == "allow"
    assert p.decide(FakeTool("TodoWrite"), {"todos": []}).behavior == "allow"


def test_bypass_allows_everything_but_deny_rules_and_dangerous_forms(tree):
    p = PermissionPolicy(mode="bypassPermissions", deny=["Read(./src/pkg/**)"], cwd=tree)

    assert p.decide(WRITE, write("/tmp/elsewhere.txt")).behavior == "allow"
    assert p.decide(BASH, {"command": "npm install"}).behavior == "allow"
    assert p.decide(READ, {"file_path": "src/pkg/.env"}).behavior == "deny"
    assert p.decide(WRITE, write("rc")).behavior == "ask"
    assert p.decide(BASH, {"command": "rm -rf ~"}).behavior == "ask"


def test_dont_ask_denies_what_would_be_asked_and_keeps_rules(tree):
    p = PermissionPolicy(mode="dontAsk", allow=["Bash(make:*)"], cwd=tree)

    decision = p.decide(BASH, {"command": "npm install"})
    assert decision.behavior == "deny" and "dontAsk" in decision.message
    assert p.decide(BASH, {"command": "make test"}).behavior == "allow"
    assert p.decide(READ, {"file_path": "src/app.py"}).behavior == "allow"


def test_non_interactive_policy_denies_instead_of_asking(tree):
    p = PermissionPolicy(interactive=False, cwd=tree)

    decision = p.decide(EDIT, edit("src/app.py"))
    assert decision.behavior == "deny" and "non-interactive" in decision.message


def test_cycle_mode_goes_default_accept_edits_plan():
    p = PermissionPolicy()

    assert [p.cycle_mode(), p.cycle_mode(), p.cycle_mode()] == ["acceptEdits", "plan", "default"]


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        PermissionPolicy(mode="yolo")


# ---------------------------------------------------------------- rule order and syntax


def test_deny_beats_ask_beats_allow(tree):
    p = PermissionPolicy(allow=["Bash(git:*)"], ask=["Bash(git push:*)"], deny=["Bash(git push --tags:*)"], cwd=tree)

    assert p.decide(BASH, {"command": "git fetch"}).behavior == "allow"
    assert p.decide(BASH, {"command": "git push origin"}).behavior == "ask"
    assert p.decide(BASH, {"command": "git push --tags"}).behavior == "deny"


def test_the_same_rule_in_deny_and_allow_denies(tree):
    p = PermissionPolicy(mode="acceptEdits", allow=["Edit(./src/**)"], deny=["Edit(./src/**)"], cwd=tree)

    assert p.decide(EDIT, edit("src/app.py")).behavior == "deny"


@pytest.mark.parametrize(
    ("rule", "command", "matches"),
    [
        ("Bash(npm test:*)", "npm test", True),
        ("Bash(npm test:*)", "npm test --watch", True),
        ("Bash(npm test:*)", "npm tester", False),
        ("Bash(npm test)", "npm test", True),
        ("Bash(npm test)", "npm test --watch", False),
        ("Bash(git * main)", "git checkout main", True),
        ("Bash(git * main)", "git checkout dev", False),
        ("Bash(ls *)", "ls", True),
        ("Bash(ls *)", "lsof", False),
        ("Bash(*)", "anything at all", True),
        ("Bash", "anything at all", True),
    ],
)
def test_bash_rule_syntax(tree, rule, command, matches):
    p = PermissionPolicy(allow=[rule], cwd=tree)

    assert (p.decide(BASH, {"command": command}).behavior == "allow") is matches


def test_an_allow_rule_must_cover_every_part_of_a_compound_command(tree):
    p = PermissionPolicy(allow=["Bash(npm test:*)"], cwd=tree)

    assert p.decide(BASH, {"command": "npm test && git status"}).behavior == "allow"
    for command in ("npm test && npm install", "npm test; curl -o x y", "npm test $(touch x)", "npm test | tee log"):
        assert p.decide(BASH, {"command": command}).behavior == "ask", command


def test_malformed_rules_are_reported_and_skipped():
    p = PermissionPolicy(allow=["Bash(npm test", "Read", "(oops)"])

    assert p.allow == ["Read"]
    assert len(p.problems) == 2


def test_mcp_server_rule_covers_its_tools():
    rule = Rule.parse("mcp__github")

    assert rule.names_tool("mcp__github__create_issue")
    assert not rule.names_tool("mcp__gitlab__create_issue")


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("Read(./src/**)", "src/app.py", True),
        ("Read(./src/**)", "README.md", False),
        ("Read(src)", "src/pkg/.env", True),
        ("Read(*.py)", "src/app.py", True),
        ("Read(.env)", "src/pkg/.env", True),
        ("Read(/src/*.py)", "src/app.py", True),
        ("Read(/src/*.py)", "src/pkg/x.py", False),
        ("Read(src/**/.env)", "src/pkg/.env", True),
        ("Read(pkg/)", "src/pkg/.env", True),
        ("Read(app.py/)", "src/app.py", False),
        ("Read(~/notes/**)", "~/notes/todo.md", True),
        ("Read(//etc/**)", "/etc/hosts", True),
        ("Read(//etc/**)", "/etcetera/x", False),
        ("Read(./link_out/**)", "link_out/secret.txt", True),
        ("Read(./link_out/**)", "../outside/secret.txt", True),
    ],
)
def test_gitignore_style_path_rules(tree, rule, path, matches):
    p = PermissionPolicy(mode="bypassPermissions", deny=[rule], cwd=tree)

    assert (p.decide(READ, {"file_path": path}).behavior == "deny") is matches


def test_slash_rules_are_anchored_at_the_settings_base_dir(tree):
    layer = SettingsLayer("project", {"deny": ["Read(/src/app.py)"]}, base_dir=tree)
    p = PermissionPolicy.from_settings([layer], cwd=tree / "src")

    assert p.decide(READ, {"file_path": str(tree / "src" / "app.py")}).behavior == "deny"


def test_read_rules_cover_glob_and_grep_and_edit_rules_cover_write(tree):
    p = PermissionPolicy(deny=["Read(./src/**)", "Edit(./src/**)"], cwd=tree)

    assert p.decide(GLOB, {"pattern": "*.py", "path": "src"}).behavior == "deny"
    assert p.decide(GREP, {"pattern": "x", "path": "src/pkg"}).behavior == "deny"
    assert p.decide(WRITE, write("src/new.py")).behavior == "deny"


def test_paths_are_resolved_through_symlinks_before_rules(tree):
    p = PermissionPolicy(mode="acceptEdits", allow=["Edit(./src/**)"], cwd=tree)

    escaped = p.decide(EDIT, edit("src/escape/secret.txt"))
    assert escaped.behavior == "ask" and "outside the working directories" in escaped.message
    assert p.decide(READ, {"file_path": "link_out/secret.txt"}).behavior == "ask"


def test_paths_are_resolved_through_dot_dot_before_rules(tree):
    p = PermissionPolicy(mode="acceptEdits", cwd=tree)

    assert p.decide(WRITE, write("src/../../outside/new.txt")).behavior == "ask"
    assert p.decide(WRITE, write("src/pkg/../new.txt")).behavior == "allow"


def test_writing_a_symlink_to_a_shell_startup_file_is_dangerous(tree):
    decision = PermissionPolicy(mode="acceptEdits", allow=["Write"], cwd=tree).decide(WRITE, write("rc"))

    assert decision.behavior == "ask" and "shell startup file" in decision.danger


def test_glob_with_an_absolute_pattern_reads_where_the_pattern_points(tree):
    p = PermissionPolicy(cwd=tree)

    assert p.decide(GLOB, {"pattern": f"{tree.parent}/outside/*.txt"}).behavior == "ask"
    assert p.decide(GLOB, {"pattern": f"{tree}/src/*.py"}).behavior == "allow"


def test_read_only_bash_outside_the_working_directories_asks_unless_a_read_rule_allows(tree):
    outside = tree.parent / "outside"

    assert PermissionPolicy(cwd=tree).decide(BASH, {"command": f"cat {outside}/secret.txt"}).behavior == "ask"
    p = PermissionPolicy(allow=[f"Read(/{outside}/**)"], cwd=tree)
    assert p.decide(BASH, {"command": f"cat {outside}/secret.txt"}).behavior == "allow"


def test_additional_directories_count_as_working_directories(tree):
    extra = tree.parent / "outside"
    p = PermissionPolicy(mode="acceptEdits", cwd=tree, additional_dirs=[extra])

    assert p.decide(READ, {"file_path": str(extra / "secret.txt")}).behavior == "allow"
    assert p.decide(EDIT, edit(str(extra / "secret.txt"))).behavior == "allow"
    assert p.decide(BASH, {"command": f"cat {extra}/secret.txt"}).behavior == "allow"


# ---------------------------------------------------------------- settings layers and /permissions


def settings_file(path: Path, permissions: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"model": "m", "permissions": permissions}))
    return path


def layers_for(tree: Path) -> list[SettingsLayer]:
    user = settings_file(tree.parent / "home" / "user.json", {"allow": ["Bash(make:*)"], "defaultMode": "plan"})
    project = settings_file(tree / ".agent-tui" / "settings.json",
                            {"deny": ["Bash(npm publish:*)"], "defaultMode": "acceptEdits",
                             "additionalDirectories": ["../outside"]})
    local = settings_file(tree / ".agent-tui" / "settings.local.json", {"allow": ["Bash(npm test:*)"]})
    return [
        SettingsLayer("user", json.loads(user.read_text())["permissions"], tree, user),
        SettingsLayer("project", json.loads(project.read_text())["permissions"], tree, project),
        SettingsLayer("local", json.loads(local.read_text())["permissions"], tree, local),
        SettingsLayer("cli", {"ask": ["Bash(git push:*)"]}),
    ]


def test_from_settings_keeps_each_rule_source(tree):
    p = PermissionPolicy.from_settings(layers_for(tree), cwd=tree)

    by_source = {source: [(e.behavior, e.rule) for e in entries] for source, entries in p.entries_by_source().items()}
    assert by_source == {
        "user": [("allow", "Bash(make:*)")],
        "project": [("deny", "Bash(npm publish:*)")],
        "local": [("allow", "Bash(npm test:*)")],
        "cli": [("ask", "Bash(git push:*)")],
    }
    assert p.mode == "acceptEdits"
    assert p.decide(READ, {"file_path": str(tree.parent / "outside" / "secret.txt")}).behavior == "allow"
    assert p.local_settings_path == tree / ".agent-tui" / "settings.local.json"


def test_the_mode_flag_wins_over_default_mode(tree):
    assert PermissionPolicy.from_settings(layers_for(tree), mode="default", cwd=tree).mode == "default"


def test_settings_problems_are_reported(tree):
    layer = SettingsLayer("project", {"allow": "Bash", "defaultMode": "fast", "deny": ["Bash("]})
    p = PermissionPolicy.from_settings([layer], cwd=tree)

    assert p.mode == "default"
    assert len(p.problems) == 3 and all(problem.startswith("project") for problem in p.problems)


def test_removing_a_rule_stops_it_and_deletes_it_from_its_file(tree):
    p = PermissionPolicy.from_settings(layers_for(tree), cwd=tree)
    [entry] = [e for e in p.entries("deny") if e.rule == "Bash(npm publish:*)"]

    p.remove_rule(entry)

    # (an unsandboxed Bash: acceptEdits would run a sandboxed one without asking)
    assert p.decide(BashTool(SandboxConfig(enabled=False)), {"command": "npm publish"}).behavior == "ask"
    stored = json.loads((tree / ".agent-tui" / "settings.json").read_text())
    assert stored["permissions"]["deny"] == [] and stored["model"] == "m"


def test_removing_a_session_rule_touches_no_file(tree):
    p = PermissionPolicy(cwd=tree)
    entry = p.add_rule("Bash(npm test:*)")
    assert p.decide(BASH, {"command": "npm test"}).behavior == "allow"

    p.remove_rule(entry)

    assert p.decide(BASH, {"command": "npm test"}).behavior == "ask"
    with pytest.raises(KeyError):
        p.remove_rule(entry)
    assert not (tree / ".agent-tui").exists()


def test_constructor_rules_are_cli_rules():
    p = PermissionPolicy(allow=["Read"], deny=["Bash"])

    assert p.entries() == [RuleEntry("allow", "Read", "cli"), RuleEntry("deny", "Bash", "cli")]


def test_remember_writes_every_proposed_rule_to_the_local_settings_file(tree):
    local = tree / ".agent-tui" / "settings.local.json"
    settings_file(local, {"allow": ["Read"], "deny": ["Bash(rm:*)"]})
    p = PermissionPolicy(cwd=tree, local_settings_path=local)

    p.remember("Bash(npm run build:*), Bash(pytest:*)")

    stored = json.loads(local.read_text())
    assert stored["permissions"] == {"allow": ["Read", "Bash(npm run build:*)", "Bash(pytest:*)"],
                                     "deny": ["Bash(rm:*)"]}
    assert [e.source for e in p.entries("allow")] == ["local", "local"]


# ---------------------------------------------------------------- through the executor


async def test_answering_a_writes_the_rule_and_the_next_call_does_not_ask(api, tmp_path):
    local = tmp_path / ".agent-tui" / "settings.local.json"
    api.push(
        reply(tool_use("Bash", {"command": "touch one.txt"}, id="t1")),
        reply(tool_use("Bash", {"command": "touch one.txt"}, id="t2")),
        reply("done"),
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(local_settings_path=local))
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("allow", remember=True))

    await session.submit("touch it twice")

    [request] = rec.of(ev.PermissionRequested)
    assert request.tool_use_id == "t1" and request.suggested_rule == "Bash(touch one.txt)"
    assert json.loads(local.read_text())["permissions"]["allow"] == ["Bash(touch one.txt)"]
    assert [r.get("is_error", False) for r in tool_results(api.requests[2].body)] == [False]
    assert (tmp_path / "one.txt").exists()


async def test_plan_mode_denial_reaches_the_model(api, tmp_path):
    api.push(reply(tool_use("Write", {"file_path": str(tmp_path / "x.txt"), "content": "x"}, id="t1")), reply("ok"))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="plan"))

    await session.submit("write x")

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True and "plan mode" in result["content"]
    assert not (tmp_path / "x.txt").exists()


async def test_session_cwd_is_the_working_directory_when_the_policy_has_none(api, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    api.push(reply(tool_use("Read", {"file_path": "a.txt"}, id="t1")), reply("ok"))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False))

    await session.submit("read a")

    assert "alpha" in tool_results(api.requests[1].body)[0]["content"]


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", "dontAsk"])
def test_exit_plan_mode_outside_plan_mode_is_refused(mode):
    from agent_tui.tools.exit_plan import ExitPlanModeTool

    decision = PermissionPolicy(mode, allow=["ExitPlanMode"]).decide(ExitPlanModeTool(), {"plan": "x"})
    assert decision.behavior == "deny" and "Plan mode is not on" in decision.message


def test_exit_plan_mode_asks_in_plan_mode_whatever_the_rules_and_nobody_can_approve_it_in_print_mode():
    from agent_tui.tools.exit_plan import ExitPlanModeTool

    asked = PermissionPolicy("plan", allow=["ExitPlanMode"]).decide(ExitPlanModeTool(), {"plan": "x"})
    assert asked.behavior == "ask" and asked.suggested_rule is None
    printed = PermissionPolicy("plan", interactive=False).decide(ExitPlanModeTool(), {"plan": "x"})
    assert printed.behavior == "deny" and "non-interactive" in printed.message
