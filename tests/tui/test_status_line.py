"""The statusLine setting: a command reading the session JSON on stdin; its first line shows under
the input and follows what happens (refreshed at most a few times a second), and a command that
hangs is killed after its timeout without holding anything up."""

from __future__ import annotations

import json
import sys
import time

from agent_tui.config import Settings
from agent_tui.tui.status_line import MIN_INTERVAL, StatusLine
from tests.loopback import reply, text

from .helpers import finished, make_app, screen_text, type_prompt, wait_until

SCRIPT = """\
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(data) + "\\n")
print(f"\\x1b[32m{data['model']['display_name']}\\x1b[0m | {data['permission_mode']} | {data['session_id'][:8]}")
print("a second line nobody sees")
"""


def _settings(command: str, **extra) -> Settings:
    return Settings(status_line={"type": "command", "command": command, **extra})


def _line(app) -> str:
    return str(app.query_one(StatusLine).render())


async def test_the_commands_first_line_shows_under_the_input_and_updates(api, tmp_path):
    script, log = tmp_path / "status.py", tmp_path / "runs.jsonl"
    script.write_text(SCRIPT)
    api.push(reply(text("Hello.")))
    app, recorded = make_app(api, tmp_path)
    app.settings = _settings(f"{sys.executable} {script} {log}")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "| default |" in _line(app))
        assert "claude-sonnet-4-6" in _line(app) and "a second line" not in screen_text(app)
        rows = screen_text(app).splitlines()
        status_row = next(n for n, row in enumerate(rows) if "| default | 5e55100d" in row)
        assert "Ask anything" in rows[status_row - 2]  # right under the input box
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: "| acceptEdits |" in _line(app))
        started = time.monotonic()
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await pilot.pause(MIN_INTERVAL * 2)
        elapsed = time.monotonic() - started
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    first = runs[0]
    assert first["hook_event_name"] == "Status" and first["cwd"] == str(app.session.cwd)
    assert first["workspace"]["current_dir"] == str(app.session.cwd) and "total_cost_usd" in first["cost"]
    # A prompt's many events make a few runs, never one per event.
    during = [r for r in runs if r["permission_mode"] == "acceptEdits"]
    assert 1 <= len(during) <= elapsed / MIN_INTERVAL + 2


async def test_a_command_that_hangs_is_killed_after_its_timeout_and_the_app_goes_on(api, tmp_path):
    api.push(reply(text("Still answering.")))
    marker = tmp_path / "started"
    app, recorded = make_app(api, tmp_path)
    app.settings = _settings(f"touch {marker}; exec sleep 30", timeout=0.5)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, marker.exists)
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        line = app.query_one(StatusLine)
        await wait_until(pilot, lambda: line._run_task is not None and line._run_task.done(), timeout=5)
        assert not line.display and "Still answering." in screen_text(app)


def test_the_setting_is_read_from_a_settings_file_and_a_bad_one_is_reported(tmp_path):
    from agent_tui.config import load_settings

    good = load_settings(tmp_path, settings_file='{"statusLine": {"type": "command", "command": "echo hi"}}',
                         environ={})
    assert good.status_line == {"type": "command", "command": "echo hi"} and good.problems == []
    bad = load_settings(tmp_path, settings_file='{"statusLine": {"type": "static", "text": "x"}}', environ={})
    assert bad.status_line is None and any("statusLine" in p for p in bad.problems)
