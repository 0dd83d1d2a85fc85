"""Skills: found in `.claude/skills`, `.agent-tui/skills` and `~/.claude/skills`, offered in the system
prompt, loaded by the Skill tool (body, folder and other files) and followed, with the skill's
`allowed-tools` allowed only while the prompt that loaded it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.permissions.policy import PermissionAnswer
from agent_tui.engine.skills import load_skills
from tests.engine_helpers import Recorder, auto_answer, make_session, system_text
from tests.loopback import reply, text, tool_use

CHANGELOG_SKILL = """\
---
name: changelog
description: Use when the user asks to record a change in CHANGELOG.md
allowed-tools: Write
---
# Changelog entries

Read `template.md` in this skill's folder, then write CHANGELOG.md from it with the Write tool.
"""


def _skill(root: Path, folder: str, text_: str, **files: str) -> Path:
    where = root / folder
    where.mkdir(parents=True)
    (where / "SKILL.md").write_text(text_)
    for name, content in files.items():
        (where / name).write_text(content)
    return where


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_skills_are_found_in_every_place_and_the_project_wins(tmp_path, home):
    project = tmp_path / "proj"
    _skill(home / ".claude" / "skills", "review", "---\ndescription: the user's review checklist\n---\nbody\n")
    _skill(home / ".claude" / "skills", "deploy", "---\ndescription: user deploy\n---\nuser\n")
    _skill(project / ".claude" / "skills", "deploy", "---\nname: deploy\ndescription: project deploy\n---\nproj\n")
    _skill(project / ".agent-tui" / "skills", "lint", "---\ndescription: |\n  run the\n  linters\n---\nl\n")
    _skill(project / ".claude" / "skills", "broken", "no front matter at all\n")
    problems: list[str] = []

    skills = load_skills(project, problems)

    assert {name: (s.description, s.source) for name, s in skills.items()} == {
        "review": ("the user's review checklist", "user"),
        "deploy": ("project deploy", "project"),
        "lint": ("run the linters", "project"),
    }
    assert skills["deploy"].body == "proj"
    assert len(problems) == 1 and "broken" in problems[0] and "no description" in problems[0]


@pytest.mark.parametrize("place", ["project", "user"])
async def test_a_skill_is_offered_loaded_and_followed_on_the_loopback_server(api, tmp_path, home, place):
    project = tmp_path / "proj"
    project.mkdir()
    root = project if place == "project" else home  # the user's skill: outside the working directory
    folder = _skill(root / ".claude" / "skills", "changelog", CHANGELOG_SKILL,
                    **{"template.md": "## Unreleased\n- {change}\n"})
    changelog = project / "CHANGELOG.md"
    api.push(
        reply(text("There is a skill for this."), tool_use("Skill", {"skill": "changelog"}, id="toolu_skill")),
        reply(tool_use("Read", {"file_path": str(folder / "template.md")}, id="toolu_read")),
        reply(tool_use("Write", {"file_path": str(changelog), "content": "## Unreleased\n- fix the parser\n"},
                       id="toolu_write")),
        reply(text("Recorded.")),
        reply(tool_use("Write", {"file_path": str(changelog), "content": "again\n"}, id="toolu_again")),
        reply(text("Could not.")),
    )
    session = make_session(api.url, project)
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("deny"))

    await session.submit("note the parser fix in the changelog")

    system = system_text(api.requests[0].body)
    assert "# Skills" in system and "- changelog: Use when the user asks to record a change in CHANGELOG.md" in system
    assert "Skill" in [t["name"] for t in api.requests[0].body["tools"]]
    loaded = str(api.requests[1].body["messages"][-1]["content"])
    assert "Read `template.md` in this skill's folder" in loaded and f"Base directory for this skill: {folder}" in loaded
    assert str(folder / "template.md") in loaded and "description:" not in loaded
    assert "{change}" in str(api.requests[2].body["messages"][-1]["content"])
    # The skill's own file and its allowed Write ran without a question.
    assert rec.of(ev.PermissionRequested) == []
    assert changelog.read_text() == "## Unreleased\n- fix the parser\n"

    # The next prompt has not loaded the skill: Write asks again (and is refused here).
    await session.submit("write it again")
    assert [r.tool_name for r in rec.of(ev.PermissionRequested)] == ["Write"]
    assert changelog.read_text() == "## Unreleased\n- fix the parser\n"


async def test_an_unknown_skill_is_an_error_naming_the_skills_there_are(api, tmp_path, home):
    _skill(tmp_path / ".claude" / "skills", "changelog", CHANGELOG_SKILL)
    api.push(reply(tool_use("Skill", {"skill": "deploy"}, id="toolu_s")), reply(text("ok")))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("deploy")

    [finished] = [e for e in rec.of(ev.ToolFinished) if e.tool_use_id == "toolu_s"]
    assert finished.is_error and "Unknown skill: 'deploy'. Available skills: changelog." in finished.preview


async def test_without_skills_the_system_prompt_lists_none(api, tmp_path, home):
    api.push(reply(text("ok")))
    session = make_session(api.url, tmp_path)
    await session.submit("hi")
    assert "# Skills" not in system_text(api.requests[0].body)
