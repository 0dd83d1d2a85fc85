"""A permission prompt never takes keys meant for the input box, never offers a rule it
cannot show faithfully, and never hides the tail of a command.

The model chooses when a prompt appears, often mid-sentence: keys typed then go on
landing in the input until the prompt has been quiet for a moment, and `a` (which saves
a rule) needs the prompt to have been on screen a while (`widgets/permission.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from types import SimpleNamespace

from textual import events

from agent_tui.tui.app import AgentApp
from agent_tui.tui.widgets.permission import ALWAYS_SHOWN, ARM_QUIET, NO_RULE_REASON, PermissionPrompt
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until

LOCAL_SETTINGS = (".agent-tui", "settings.local.json")


def _bash_turn(api, command: str, answer: str = "Done.") -> None:
    api.push(reply(tool_use("Bash", {"command": command}, id="toolu_bash")), reply(text(answer)))


def _prompt_box(shown: str) -> str:
    """The permission prompt's lines of the screen (the transcript shows the command too)."""
    lines = shown.splitlines()
    top = next(n for n, line in enumerate(lines) if "Permission needed" in line)
    bottom = next(n for n in range(top, len(lines)) if lines[n].strip().startswith("╰"))
    return "\n".join(lines[top:bottom + 1])  # the bottom border says how much more there is


def _key_row(app) -> str:
    return str(app.permission.query_one("#permission-keys").render())


@contextlib.asynccontextmanager
async def _touch_prompt_shown(api, tmp_path):
    """An app whose model asks to run `touch made.txt`, with that prompt drawn: (app, pilot, recorded)."""
    _bash_turn(api, "touch made.txt")
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "make a file")
        await wait_until(pilot, lambda: app.permission._drawn_at is not None)
        yield app, pilot, recorded


async def test_keys_typed_while_a_prompt_arms_land_in_the_input_and_answer_nothing(api, tmp_path, monkeypatch):
    # The grace is stretched for this test, so a loaded machine that stalls between two of its
    # keys (typed a third of the real grace apart) cannot let the prompt arm in the middle.
    monkeypatch.setattr(PermissionPrompt, "arm_quiet", ARM_QUIET * 4)
    _bash_turn(api, "touch made.txt")
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "make a file")
        prompt = app.permission
        await wait_until(pilot, lambda: prompt.current is not None)
        request = prompt.current
        # A person still typing: `y` (and `a`, `n`, `e`) arrive right after the prompt appeared,
        # then more letters, each within the grace of the one before, for longer than the grace.
        started = time.monotonic()
        typed = ""
        for letter in "yane and then some":
            await pilot.press(letter if letter != " " else "space")
            typed += letter
            await pilot.pause(ARM_QUIET / 3)
        assert time.monotonic() - started > ARM_QUIET * 2
        assert not prompt.armed
        assert not request.future.done(), "a key typed during the grace answered the prompt"
        assert app.focused is app.prompt_input
        assert app.prompt_input.text == typed
        assert "arming…" in _key_row(app)
        assert not (tmp_path / "made.txt").exists()

        # Quiet for a moment: it arms, takes the focus, and the hint goes.
        await wait_armed(pilot, app)
        quiet = time.monotonic() - app.last_key_at
        assert quiet >= ARM_QUIET
        await pilot.pause(0.05)
        assert app.focused is prompt
        assert "arming…" not in _key_row(app) and "y yes" in _key_row(app)
        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert (tmp_path / "made.txt").exists()
        # What was typed meanwhile is still in the input, nothing lost.
        assert app.focused is app.prompt_input and app.prompt_input.text == typed
    assert not (tmp_path.joinpath(*LOCAL_SETTINGS)).exists()


async def test_a_saves_a_rule_only_once_the_prompt_has_been_on_screen_a_second(api, tmp_path):
    _bash_turn(api, "npm run build")
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "build it")
        prompt = app.permission
        await wait_until(pilot, lambda: prompt.current is not None)
        request, rule = prompt.current, prompt.current.suggested_rule
        assert rule
        # `a` waits longer than the other answers; on a loaded machine the plain arming can take
        # most of a second to be seen, so this prompt's wait for `a` is stretched to keep the two apart.
        prompt.always_shown = ALWAYS_SHOWN * 4
        await wait_armed(pilot, app)
        pressed = time.monotonic()
        assert not prompt.always_armed and pressed - prompt._drawn_at < prompt.always_shown, "armed too late to test `a`"
        await pilot.press("a")
        await pilot.pause(0.05)
        assert not request.future.done(), "`a` answered a prompt shown for less than a second"
        assert rule not in app.session.policy.allow
        assert not (tmp_path.joinpath(*LOCAL_SETTINGS)).exists()

        await wait_armed(pilot, app, always=True)
        assert time.monotonic() - prompt._drawn_at >= prompt.always_shown
        await pilot.press("a")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
    assert rule in app.session.policy.allow
    settings = json.loads(tmp_path.joinpath(*LOCAL_SETTINGS).read_text())
    assert rule in settings["permissions"]["allow"]


async def test_bidi_and_zero_width_characters_are_marked_and_never_offered_as_a_rule(api, tmp_path):
    # Reads as `echo done # safe` ... with the override, a terminal would draw the tail reversed.
    command = "echo done \u202e# efas\u202c\u200b && touch hidden.txt"
    _bash_turn(api, command)
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 32)) as pilot:
        await type_prompt(pilot, "finish up")
        prompt = app.permission
        await wait_until(pilot, lambda: prompt.current is not None)
        request = prompt.current
        assert request.suggested_rule, "the engine offers a (clean) rule for the command's other part"
        await wait_armed(pilot, app, always=True)
        shown = screen_text(app)
        assert "echo done <U+202E># efas<U+202C><U+200B> && touch hidden.txt" in shown
        asking = _prompt_box(shown)
        assert "\u202e" not in asking and "\u200b" not in asking
        assert "a yes" not in _key_row(app) and "don't ask again for" not in shown
        assert NO_RULE_REASON in shown
        # The marks are drawn in reverse video.
        subject = prompt.query_one("#permission-subject").render()
        marked = [span for span in subject.spans if "reverse" in str(span.style)]
        assert len(marked) == 3
        await pilot.press("a")
        await pilot.pause(0.05)
        assert not request.future.done(), "`a` answered a command holding hidden characters"
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
    assert not (tmp_path / "hidden.txt").exists()
    assert not (tmp_path.joinpath(*LOCAL_SETTINGS)).exists()


async def test_a_command_whose_tail_is_pushed_out_of_view_says_how_much_more_there_is(api, tmp_path):
    command = "echo start" + "\n" * 40 + "touch tail-of-the-command.txt"
    _bash_turn(api, command)
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "run it")
        prompt = app.permission
        await wait_until(pilot, lambda: prompt.current is not None)
        await wait_armed(pilot, app, always=True)
        await pilot.pause(0.1)
        shown = _prompt_box(screen_text(app))
        more = [line for line in shown.splitlines() if "more lines" in line]
        # On the prompt's bottom border, under the answers.
        assert len(more) == 1 and "more lines (↓ scrolls)" in more[0] and more[0].lstrip().startswith("╰"), shown
        command_area = shown.split("y yes")[0]
        assert "echo start" in command_area and "tail-of-the-command" not in command_area
        hidden = int(more[0].split("─", 1)[1].split()[0])
        body = prompt.query_one("#permission-body")
        assert hidden == body.max_scroll_y > 0
        assert "y yes" in shown and "n no" in shown  # the answer row is never pushed off

        # Scrolling the body shows the tail; the count follows, then goes.
        await pilot.press("down")
        await pilot.pause(0.05)
        assert f"─ {hidden - 1} more lines" in screen_text(app)
        await pilot.press("pagedown", "pagedown", "pagedown", "pagedown", "pagedown")
        await pilot.pause(0.1)
        shown = _prompt_box(screen_text(app))
        assert "│   touch tail-of-the-command.txt" in shown and "more line" not in shown
        assert "y yes" in shown
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))


async def test_a_second_prompt_right_after_the_first_is_answered_arms_anew(api, tmp_path):
    """`y` pressed twice (a bounce, or a habit) answers the first prompt only: the next one
    arms as if it had just appeared, and the second `y` goes to the input."""
    api.push(
        reply(tool_use("Bash", {"command": "touch one.txt"}, id="toolu_one"),
              tool_use("Bash", {"command": "touch two.txt"}, id="toolu_two")),
        reply(text("Both handled.")),
    )
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "make two files")
        prompt = app.permission
        await wait_armed(pilot, app)
        first = prompt.current
        await pilot.press("y")
        await wait_until(pilot, lambda: prompt.current is not None and prompt.current is not first)
        second = prompt.current
        await pilot.press("y")
        await pilot.pause(0.05)
        assert first.future.done() and not second.future.done()
        assert app.prompt_input.text == "y"
        assert (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
    assert not (tmp_path / "two.txt").exists()


async def test_hidden_characters_in_a_diff_are_marked(api, tmp_path):
    target = tmp_path / "check.py"
    content = 'access = "user\u202e \u2066# admin\u2069\u2066"\n'
    api.push(reply(tool_use("Write", {"file_path": str(target), "content": content})), reply(text("ok")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 32)) as pilot:
        await type_prompt(pilot, "write the check")
        await wait_armed(pilot, app)
        shown = _prompt_box(screen_text(app))
        assert '+access = "user<U+202E> <U+2066># admin<U+2069><U+2066>"' in shown, shown
        assert not any(ch in shown for ch in "\u202e\u2066\u2069")
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))


async def test_a_key_typed_while_the_app_was_busy_keeps_the_prompt_from_arming(api, tmp_path):
    """The app stalls past the arming time while a key is typed, and Textual's input thread hands
    it over just after: the late check does not arm (the key may be on its way), the key lands in
    the input, and the prompt arms a pause after it."""
    async with _touch_prompt_shown(api, tmp_path) as (app, pilot, recorded):
        prompt = app.permission
        request, loop, stall_over = prompt.current, asyncio.get_running_loop(), threading.Event()

        def type_y() -> None:  # the input thread, held up as long as the app, hands the key over
            stall_over.wait()
            asyncio.run_coroutine_threadsafe(app._post_message(events.Key("y", "y")), loop)

        typist = threading.Thread(target=type_y)
        typist.start()
        time.sleep(ARM_QUIET * 1.6)  # the app is busy: nothing of it runs meanwhile
        stall_over.set()
        await wait_until(pilot, lambda: app.prompt_input.text == "y" or request.future.done())
        typist.join()
        assert not request.future.done(), "a key typed while the app was busy answered the prompt"
        assert app.prompt_input.text == "y" and not prompt.armed
        await wait_armed(pilot, app)
        assert time.monotonic() - app.last_key_at >= ARM_QUIET
        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
    assert (tmp_path / "made.txt").exists()


async def test_bytes_waiting_on_the_terminals_input_keep_the_prompt_from_arming(api, tmp_path, monkeypatch):
    """Keys the terminal has sent that Textual's input thread has not read yet (here: a pipe the
    app's driver reads from) hold the prompt back as keys it has handled do."""
    read_end, write_end = os.pipe()
    driver_reading = SimpleNamespace(is_headless=False, fileno=read_end)
    async with _touch_prompt_shown(api, tmp_path) as (app, pilot, recorded):
        driver, prompt = app._driver, app.permission
        monkeypatch.setattr(app, "keys_waiting", lambda: AgentApp.keys_waiting(SimpleNamespace(
            _driver=driver_reading, is_headless=False)))
        os.write(write_end, b"y")
        assert app.keys_waiting() and app._driver is driver
        await pilot.pause(ARM_QUIET * 2)
        assert not prompt.armed
        os.read(read_end, 1)  # the input thread reads it
        assert not app.keys_waiting()
        await wait_armed(pilot, app)
        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
    os.close(read_end)
    os.close(write_end)
    assert (tmp_path / "made.txt").exists()
