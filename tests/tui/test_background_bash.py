"""Ctrl+B sends the running Bash command to the background: it keeps running, its output goes to
a background log, the turn goes on with a result saying so, and the model reads the rest later."""

from __future__ import annotations

import json

from agent_tui.engine import events as ev
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, type_prompt, wait_until

COMMAND = "echo started; sleep 3; echo done"


async def test_ctrl_b_backgrounds_a_running_command_and_the_model_reads_its_output_later(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": COMMAND}, id="toolu_slow")), reply(text("It runs on its own.")))
    app, recorded = make_app(api, tmp_path, allow=["Bash(echo started; sleep 3; echo done)", "Read"])
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "run the slow job")
        await wait_until(pilot, lambda: any(isinstance(e, ev.ToolProgress) and "started" in str(e) for e in recorded))
        await pilot.press("ctrl+b")
        await wait_until(pilot, finished(recorded))
        [result] = [e for e in recorded if isinstance(e, ev.ToolFinished) and e.tool_use_id == "toolu_slow"]
        assert not result.is_error and result.data["moved_to_background"]
        log = result.data["output_path"]
        shell = app.session.tool_state["background_shells"][result.data["background_id"]]
        assert shell.exit_code is None  # still running: the turn did not wait for it
        sent = json.dumps(api.requests[1].body["messages"][-1])
        assert "The user sent this command to the background" in sent and log in sent

        # Later the model reads the log: what it printed before Ctrl+B and after.
        await wait_until(pilot, lambda: shell.process.returncode is not None, timeout=10)
        api.push(reply(tool_use("Read", {"file_path": log}, id="toolu_read")), reply(text("It said done.")))
        await type_prompt(pilot, "did it finish?")
        await wait_until(pilot, finished(recorded, 2))
    content = json.dumps(api.requests[3].body["messages"][-1])
    assert "started" in content and "done" in content


async def test_bashes_lists_background_commands_and_kills_one(api, tmp_path):
    from .helpers import screen_text

    api.push(reply(tool_use("Bash", {"command": "sleep 60", "run_in_background": True}, id="toolu_bg")),
             reply(text("Started.")))
    app, recorded = make_app(api, tmp_path, allow=["Bash(sleep 60)"])
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "start it")
        await wait_until(pilot, finished(recorded))
        await type_prompt(pilot, "/bashes")
        await wait_until(pilot, lambda: "bash_1" in screen_text(app) and "running" in screen_text(app))
        shell = app.session.tool_state["background_shells"]["bash_1"]
        await type_prompt(pilot, "/bashes kill bash_1")
        await wait_until(pilot, lambda: "Stopped bash_1" in screen_text(app))
        assert shell.process.returncode is not None
