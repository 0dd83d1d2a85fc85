"""/skills lists the skills the model can load, with where each came from."""

from __future__ import annotations

from .helpers import make_app, screen_text, type_prompt, wait_until


async def test_skills_lists_each_skill_with_its_description_and_allowed_tools(api, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = tmp_path / ".claude" / "skills" / "changelog"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: Record a change in CHANGELOG.md\nallowed-tools: Write\n---\nx\n")
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "/skills")
        await wait_until(pilot, lambda: "Record a change in CHANGELOG.md" in screen_text(app))
        row = next(line for line in screen_text(app).splitlines() if "Record a change" in line)
        assert "changelog" in row and ".claude/skills/changelog/SKILL.md" in row and "Write" in row


async def test_skills_says_where_skills_go_when_there_are_none(api, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "/skills")
        await wait_until(pilot, lambda: "No skills" in screen_text(app))
