"""Quitting the app runs the SessionEnd hooks with Claude Code's reason for it."""

from __future__ import annotations

import json

from agent_tui.config import Settings
from tests.loopback import reply
from tests.test_hook_events import inputs, recorder, table
from tests.test_hooks_session import hook_script
from tests.tui.test_claude_project_tui import app_for

from .helpers import finished, settle, type_prompt, wait_until


async def test_quitting_runs_session_end_with_prompt_input_exit(api, tmp_path):
    script, log = recorder(tmp_path, "end")
    copy = tmp_path / "hooks" / "transcript-at-end.jsonl"
    keep = hook_script(tmp_path, "keep.sh", "python3 -c \"import json,sys,shutil; "
                       f"shutil.copy(json.load(sys.stdin)['transcript_path'], '{copy}')\"\n")
    api.push(reply("Hello."))
    hooks = table(("SessionEnd", script, None), ("SessionEnd", keep, "prompt_input_exit"))
    app, recorded = app_for(api, tmp_path, settings=Settings(hooks=hooks))
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "hi")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        session_id = app.session.session_id
    [payload] = inputs(log)
    assert payload["hook_event_name"] == "SessionEnd" and payload["reason"] == "prompt_input_exit"
    assert payload["session_id"] == session_id
    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant"]
