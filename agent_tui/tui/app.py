"""The Textual front end: engine events in, user intents out (docs/architecture.md §8).

`AgentApp` holds a `Session`: one made by the caller, or one it makes right after
its first frame from a `SessionStart` (`start.py`), so the first paint never waits for
the engine to load.  The bridge worker turns bus events into `EngineEvents` batches,
which the app's `Conversation` (`conversation.py`) applies in order; each prompt runs
`Session.submit()` in its own worker, in the order typed.  The app never drives the
loop: it submits, aborts, and answers permission Futures.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import signal
import time
from collections.abc import Callable, Iterable
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from ..config import LOCAL_SETTINGS, Settings
from ..paths import cache_dir as css_cache_dir
from .css_cache import CachedStylesheet
from .notify import Notifier
from .start import SessionStart
from .state import CompactionStatus
from .status_line import StatusLine, status_payload
from .themes import DEFAULT_THEME, load_themes
from .widgets.footer import Footer
from .widgets.gauge import Gauge
from .widgets.header import SessionHeader
from .widgets.permission import COMPACT_HEIGHT, PermissionPrompt
from .widgets.prompt_input import InputArea, PromptInput
from .widgets.timeline import Timeline, TimelineStrip
from .widgets.transcript import Notice, Transcript

# The engine loads after the first frame (`start.py`): these are imported where used.
if TYPE_CHECKING:
    from textual.driver import Driver

    from ..engine import CustomCommand, Session
    from ..engine import events as ev
    from .bridge import Bridge, EngineEvents
    from .commands import SlashCommand
    from .mentions import Prompt
    from .terminal import TerminalGuard

QUIT_WINDOW = 2.0  # seconds within which a second Ctrl+C quits
TICK = 1 / 8  # live elapsed times and spinners
MIN_TRANSCRIPT = 100  # the timeline opens as a pane only when the transcript keeps this many columns


# A resumed session's stored events are applied in batches; the loop is handed back (keys taken,
# frames drawn) after at most this many seconds of them.
REPLAY_BATCH = 40
REPLAY_SLICE = 0.01
# A resumed session's last prompts, drawn before the rest is loaded.
TAIL_PROMPTS = 3

# Seconds within which a second Esc, with nothing running, opens /rewind.
DOUBLE_ESCAPE = 0.8


def _tail_split(events: list) -> int:
    """Where the last TAIL_PROMPTS prompts of `events` begin (0: there are no more than those)."""
    starts = [n for n, event in enumerate(events) if type(event).__name__ == "UserMessage"]
    return starts[-TAIL_PROMPTS] if len(starts) > TAIL_PROMPTS else 0


class InputFirstQueue(asyncio.Queue):
    """The app's message queue, input first (docs/architecture.md §8): a key, a click or a paste
    goes ahead of the engine's batches and the callbacks already waiting, behind the input that
    came before it. A key typed during a tool burst then waits for the message being handled,
    not for every batch queued before it."""

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self._inputs = 0  # how many input events are at the queue's front

    def _put(self, item: Any) -> None:
        if isinstance(item, (events.InputEvent, events.Paste)):
            self._queue.insert(self._inputs, item)  # type: ignore[attr-defined]
            self._inputs += 1
        else:
            self._queue.append(item)  # type: ignore[attr-defined]

    def _get(self) -> Any:
        if self._inputs:
            self._inputs -= 1
        return self._queue.popleft()  # type: ignore[attr-defined]


# Frames a screen update waits at most while input is pending (a frame each ~16 ms).
FRAMES_INPUT_FIRST = 3


class InputFirstScreen(Screen):
    """The app's screen, whose next frame waits while a key is on its way (docs/architecture.md
    §8): a frame of a tool burst lays out and draws 30-100 ms of rows, and a key typed meanwhile
    would wait for it, then draw at once (`PromptInput._echo`). At most `FRAMES_INPUT_FIRST`
    frames in a row wait, so steady typing never stops the screen."""

    _frames_waited = 0

    def _on_timer_update(self) -> None:
        app = self.app
        if self._frames_waited < FRAMES_INPUT_FIRST and isinstance(app, AgentApp) and app.input_pending():
            self._frames_waited += 1
            return  # the update timer stays armed: the next tick draws
        self._frames_waited = 0
        super()._on_timer_update()

    # A layout asked for while the app batched its updates, made when the batch ends (with the size
    # it was asked for, if any).
    _layout_deferred = False
    _deferred_size: Size | None = None

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        # Textual lays out during a batch and draws after it.  The app's mounting is a batch, and a
        # resumed session's last screen is mounted in it: laid out then, with entries still to come,
        # that layout would be made again for the frame drawn (docs/architecture.md §8).  Only the
        # batch before the first layout (`_dom_ready`): later ones are Textual's own.
        app = self.app
        if app._batch_count and not app._dom_ready:
            self._layout_deferred = True
            self._deferred_size = size or self._deferred_size
            return
        super()._refresh_layout(size, scroll)

    def batch_ended(self) -> None:
        """The layout deferred during the app's batch of updates, made now."""
        if self._layout_deferred:
            size, self._deferred_size, self._layout_deferred = self._deferred_size, None, False
            self._refresh_layout(size)


class AgentApp(App[int], inherit_bindings=False):
    CSS_PATH = "app.tcss"
    TITLE = "agent-tui"

    BINDINGS = [
        Binding("escape", "abort", "Stop", id="app.abort"),
        Binding("ctrl+c", "interrupt", "Stop / quit", priority=True, show=False, id="app.interrupt"),
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("shift+tab", "cycle_mode", "Mode", priority=True, id="app.cycle_mode"),
        Binding("ctrl+t", "toggle_timeline", "Timeline", id="app.toggle_timeline"),
        Binding("ctrl+o", "expand_output", "Output", id="app.expand_output"),
        Binding("ctrl+b", "background_bash", "Background", priority=True, show=False, id="app.background_bash"),
        # Shown once, at the footer's right end (Textual's Footer puts the palette's key there).
        Binding("ctrl+p", "command_palette", "Commands", priority=True, show=False, id="app.command_palette"),
    ]

    @cached_property
    def _message_queue(self) -> asyncio.Queue:  # Textual's own queue, with input first
        return InputFirstQueue()

    def get_default_screen(self) -> Screen:
        return InputFirstScreen(id="_default")

    def input_pending(self) -> bool:
        """Whether a key, click or paste waits in the app's queue, or anything in the focused
        widget's (a key passed on to it, or the change it made)."""
        focused = self.focused
        return bool(self._message_queue._inputs) or (focused is not None and not focused._message_queue.empty())

    def __init__(
        self,
        session: Session | SessionStart,
        initial_prompt: str | None = None,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        pick_session: bool = False,
        mcp_json_pending: dict[str, dict] | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__()
        # Parsed once, then read back by later runs (`css_cache.py`): a few hundredths off the first frame.
        self.stylesheet = CachedStylesheet(variables=self.get_css_variables(), folder=css_cache_dir())
        # None until the session is made: right after the first frame when given a SessionStart.
        self.session: Session | None
        if isinstance(session, SessionStart):
            self.session, self._start = None, session
        else:
            self.session, self._start = session, SessionStart.of(session, settings or Settings())
        self._session_ready = asyncio.Event()
        # `.mcp.json` servers nobody approved or rejected yet: asked about before the session starts.
        self._mcp_json_pending = dict(mcp_json_pending or {})
        # The settings the front end was started with (`/config`, the status line, notifications, keys).
        self.settings = settings = self._start.settings
        self.notifier = Notifier(self._write_to_terminal, settings.preferred_notif_channel)
        # `agent-tui -r` with no id: the app opens on the list of stored sessions.
        self._pick_session = pick_session
        # Every time the UI shows comes from this clock (tests freeze or step it).
        self.clock: Callable[[], float] = time.monotonic
        self.started_at = self.clock()
        self._initial_prompt = initial_prompt
        # Binding ids to keys, from settings; /help and the palette show what it binds.
        self.keymap = dict(keymap or {})
        self._bridge: Bridge | None = None
        self._prompt_order = asyncio.Lock()
        self._last_interrupt = float("-inf")
        # Set by `run_tui` on a real terminal: quits promptly when the terminal goes away (`terminal.py`).
        self.terminal_guard: TerminalGuard | None = None
        # When the person last pressed a key or pasted (a permission prompt arms only after a pause).
        self.last_key_at = float("-inf")
        self._problems: list[str] = []
        # Ctrl+T hid the timeline (the pane or the strip, whichever the width gives) until pressed again.
        self._timeline_hidden = False
        self._widgets_found = False
        # The start of a resumed session is being loaded (its last screen is already drawn).
        self.history_loading = False
        self._worked_ahead = False
        # A resumed session's warm-up (`warmup.py`) waits for its last screen.
        self._warm_up_held = False
        # The events before a resumed session's last screen, once that screen is drawn before the
        # engine loads (`_draw_resumed_tail`).
        self._drawn_ahead: Callable[[], list] | None = None
        themes, self._problems = load_themes()
        for t in themes:
            self.register_theme(t)
        wanted = theme or DEFAULT_THEME
        if wanted not in self.available_themes:
            self._problems.append(f"Unknown theme {wanted!r}; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        self._use_theme(wanted)

    def _end_batch(self) -> None:
        super()._end_batch()
        if not self._batch_count:
            for screen in self._screen_stacks.get(self._current_mode, ()):
                if isinstance(screen, InputFirstScreen):
                    screen.batch_ended()

    def _use_theme(self, name: str) -> None:
        """Apply the start-up theme before the CSS is first parsed.

        Assigning `self.theme` here would queue Textual's `refresh_css`, which parses
        every stylesheet a second time right after the first parse; this does what
        `_watch_theme` does, minus that re-parse (no widget has styles yet)."""
        self.set_reactive(AgentApp.theme, name)
        dark = self.current_theme.dark
        classes = {c: False for c in self.classes if c.startswith("-theme-")}
        classes.update({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark})
        self.update_classes(classes, update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        timeline = Timeline(lambda: self.clock(), id="timeline")
        with Horizontal(id="body"):
            yield Transcript(id="transcript")
            yield timeline
        yield TimelineStrip(timeline, id="timeline-strip")
        yield PermissionPrompt(self._start.cwd, id="permission")
        yield Static("", id="queued", markup=False)
        yield Static("", id="activity", markup=False)
        yield InputArea(self._start.cwd, self._menu_commands, id="input-area")
        yield StatusLine(id="status-line")
        yield Gauge(lambda: self.clock(), id="gauge")
        yield Footer(id="footer")

    def _resource_mentions(self, partial: str) -> list[tuple[str, str]]:
        """`server:uri` of the MCP resources matching what follows `@` (by server, URI or name)."""
        lower, found = partial.lower(), []
        for resource in self.session.mcp_resources() if self.session is not None else []:
            mention = f"{resource.server}:{resource.uri}"
            if mention.lower().startswith(lower) or (lower and lower in resource.name.lower()):
                found.append((mention, resource.name))
        return found[:12]

    def _menu_commands(self) -> list[SlashCommand]:
        """The slash commands the completion menu offers now (the slash-command table loads
        when the menu first opens, not for the first frame)."""
        from .commands import menu_commands

        return menu_commands(self.session)

    async def on_mount(self) -> None:
        # Looked up once: handlers and the ticker run until the very end of the app.
        self.transcript = self.query_one(Transcript)
        self.timeline = self.query_one(Timeline)
        self.gauge = self.query_one(Gauge)
        self.permission = self.query_one(PermissionPrompt)
        self.prompt_input = self.query_one(PromptInput)
        self.header = self.query_one(SessionHeader)
        self.timeline_strip = self.query_one(TimelineStrip)
        self.query_one("#activity", Static).display = False
        self._widgets_found = True
        if self.keymap:
            self.set_keymap(self.keymap)
        # A kill or a closed terminal quits as Ctrl+Q does, so on_unmount still kills background commands.
        if self.terminal_guard is not None:
            self.terminal_guard.attach(asyncio.get_running_loop(), self._terminal_lost)
        else:
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    asyncio.get_running_loop().add_signal_handler(signum, self.exit)
        self.refresh_header()
        self.permission.display = False
        self.query_one("#queued", Static).display = False
        self.apply_layout()
        self.prompt_input.focus()
        self.transcript.add(Notice(self._welcome(), kind="welcome"))
        for problem in self._problems:
            self.say(problem, kind="error")
        if self.session is not None:
            self._attach(self.session, self._mcp_json_pending)
        if self._resuming():
            self.transcript.hold_warm_up()  # started after the last screen (`_work_ahead`)
            self._warm_up_held = True
            if self.session is None:
                # Mounted with the app, in its batch of updates (`InputFirstScreen` lays out after it):
                # the first frame drawn is the last screen.
                try:
                    await self._draw_resumed_tail()
                except Exception as exc:  # the session is made all the same: a prompt still works
                    self.say(f"Could not draw the resumed conversation: {exc}", kind="error")
        self.call_after_refresh(
            # The coroutine is made then: an app that closes before its first refresh leaves none unawaited.
            lambda: self.run_worker(self._after_first_frame(), name="session", group="session", exit_on_error=False)
        )

    async def _after_first_frame(self) -> None:
        """Load the engine in a thread and make the session (unless given one); then the work
        ahead (`_work_ahead`), or, for a resumed session, that after its last screen."""
        if self.session is None:
            await asyncio.to_thread(self._start.load)
            try:
                session, pending = self._start.build()
            except Exception as exc:  # as the command line reports a bad start: a message and status 2
                self.exit(return_code=2, message=f"agent-tui: {exc}")
                return
            self._attach(session, pending)
        if not self._resuming():  # else once the resumed session's last screen is drawn (`load_history`)
            self._work_ahead()

    def _resuming(self) -> bool:
        if self.session is None:
            return self._start.resumed is not None and bool(self._start.resumed.history)
        return self.session.transcript is not None and bool(self.session.history)

    async def _draw_resumed_tail(self) -> None:
        """A resumed session's last screen, from the transcript the command line read, before the
        engine loads (docs/architecture.md §8): the conversation that draws it takes the session later."""
        from ..engine import replay_events, tail_start
        from .conversation import Conversation

        self.conversation = Conversation(self, None, lambda: self.clock(), self.refresh_header, cwd=self._start.cwd)
        resumed = self._start.resumed
        start = tail_start(resumed, TAIL_PROMPTS)
        if start:  # only the last prompts' events before their screen; the rest's after it
            await self._draw_last_screen(replay_events(resumed, since=start), more=True, wait=False)
            self._drawn_ahead = lambda: replay_events(resumed, until=start)
            return
        events = replay_events(resumed)
        split = _tail_split(events)
        await self._draw_last_screen(events[split:], more=bool(split), wait=False)
        self._drawn_ahead = lambda: events[:split]

    def _work_ahead(self) -> None:
        """Once: make the parts the first frame does not show (a permission request or the menu makes
        them itself, should it come sooner), let the model do ahead, in a thread, what would otherwise
        stall the first request, and load what the first answer needs if the transcript left that to
        the app.  After a resumed session's last screen: until then this work would slow it down."""
        if not self._worked_ahead:
            self._worked_ahead = True
            self.permission.build()
            self.prompt_input.prepare_menu()
            self._save_parsed_css()
            self.run_worker(self._start.model.prepare, name="prepare", group="prepare", thread=True,
                            exit_on_error=False)
        if self._warm_up_held:
            from .warmup import warm_up

            self._warm_up_held = False
            warm_up()

    def _save_parsed_css(self) -> None:
        if isinstance(self.stylesheet, CachedStylesheet):
            self.stylesheet.save()

    def _attach(self, session: Session, mcp_json_pending: dict[str, dict]) -> None:
        """Wire the session to the view; then start it (after the `.mcp.json` question, if any)."""
        from .bridge import Bridge
        from .conversation import Conversation

        self.session = session
        session.accept_elicitation_forms()  # MCP servers' forms show here (elicitation.py)
        self.prompt_input.resource_mentions = self._resource_mentions
        self._mcp_json_pending = dict(mcp_json_pending)
        self._bridge = Bridge(session, self)
        if self._drawn_ahead is None:
            self.conversation = Conversation(self, session, lambda: self.clock(), self.refresh_header)
        else:
            self.conversation.session = session  # (it drew the last screen before the session was made)
        self.refresh_header()
        gauge = self.gauge
        gauge.context_window = session.context_window
        gauge.threshold = session.auto_compact_threshold
        self.run_worker(self._bridge.run(), name="bridge", group="bridge", exit_on_error=False)
        self.status_line = self.query_one(StatusLine)
        self.status_line.configure(self.settings.status_line, session.cwd,
                                   lambda: status_payload(self.session, self.started_at))
        session.add_listener(self._notify_when_away)
        self.set_interval(TICK, self.conversation.tick)
        self._session_ready.set()
        if self._mcp_json_pending:
            from .screens import McpApprovalScreen  # only when .mcp.json asks: not on the first frame's path

            self.push_screen(McpApprovalScreen(self._mcp_json_pending), self._mcp_json_answered)
        else:
            # After the first frame: starting the session runs the bwrap self-test (a subprocess).
            self.call_after_refresh(self._begin)

    def _soon(self, action: Callable[..., Any], *args: Any) -> None:
        """Run `action(*args)` now, or once the session is there (a key pressed before it was)."""
        if self.session is not None:
            action(*args)
            return

        async def when_ready() -> None:
            await self._session_ready.wait()
            action(*args)

        # Waiters wake in the order they began waiting: prompts keep the order they were typed in.
        self.run_worker(when_ready(), group="waiting", exit_on_error=False)

    def _begin(self) -> None:
        self.session.start()
        # A resumed conversation is drawn first; a prompt given on the command line follows it.  In a
        # worker: keys typed meanwhile reach the input at once.
        self.run_worker(self._replay_resumed(), name="resume", group="resume", exit_on_error=False)

    def _mcp_json_answered(self, choice: str | None) -> None:
        """Remember the answer where Claude Code keeps it (local settings); approved servers start with the session."""
        from ..engine import record_mcp_json_choice

        pending, self._mcp_json_pending = self._mcp_json_pending, {}
        choice = choice or "reject"
        try:
            record_mcp_json_choice(self.session.cwd / LOCAL_SETTINGS, pending, choice)
        except OSError as exc:
            self.say(f"Could not record the .mcp.json answer in {LOCAL_SETTINGS}: {exc}", kind="error")
        names = ", ".join(pending)
        if choice == "reject":
            self.say(f"Not using the .mcp.json server(s) {names}; enabledMcpjsonServers in settings turns them on.")
        else:
            # The session's `mcp_servers_changed` shows the servers now configured.
            self.session.set_mcp_servers({**pending, **self.session.mcp_servers})
        self._begin()

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; on Linux one that survives its terminal going away (`terminal.py`)."""
        driver_class = super().get_driver_class()
        from textual.drivers.linux_driver import LinuxDriver

        if driver_class is LinuxDriver:
            from .terminal_driver import GuardedDriver

            return GuardedDriver
        return driver_class

    def _terminal_lost(self, status: int) -> None:
        """SIGHUP, SIGTERM or a dead terminal: stop the turn (running tools are killed) and quit."""
        if self.session is not None and self.session.running:
            self.session.abort()
        if self._bridge is not None:
            self._bridge.close()
        self.exit(return_code=status)

    def save_session_now(self) -> None:
        """Flush and close the transcript (releasing the session's lock) when the process must
        end before its shutdown finished; from any thread."""
        session = self.session
        if session is not None:
            session.close_transcript()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste) and not getattr(event, "is_forwarded", False):
            self.last_key_at = time.monotonic()
        await super().on_event(event)

    def keys_waiting(self) -> bool:
        """Whether the terminal has sent bytes that Textual's input thread has not read yet: keys
        typed while the app was busy, which `last_key_at` does not know of (docs/architecture.md §8)."""
        fileno = getattr(self._driver, "fileno", None) if not self.is_headless else None
        if not isinstance(fileno, int):
            return False
        try:
            return bool(select.select([fileno], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    # ------------------------------------------------------------ notifications

    def _write_to_terminal(self, data: str) -> None:
        if not self.is_headless and self._driver is not None:
            self._driver.write(data)

    def _notify_when_away(self, event: ev.Event) -> None:
        """A desktop notification and the bell when the person is in another window."""
        if self.app_focus:
            return
        from ..engine import events as ev

        if type(event) is ev.PermissionRequested and event.tool_name == "AskUserQuestion":
            self.notifier.notify("agent-tui", "The agent has a question for you")
        elif type(event) is ev.PermissionRequested:
            self.notifier.notify("agent-tui", f"Permission needed: {event.tool_name}")
        elif type(event) is ev.ElicitationRequested:
            self.notifier.notify("agent-tui", f"MCP server {event.server} asks for input")
        elif type(event) is ev.QueryFinished:
            first = next((line.strip() for line in (event.result or "").splitlines() if line.strip()), "")
            if event.is_error:
                body = f"Stopped: {event.error or event.terminal_reason}"
            else:
                body = first[:100] or "Finished"
            self.notifier.notify("agent-tui", body)

    def _welcome(self) -> str:
        lines = ["agent-tui — type a request and press Enter. /help lists the keys and commands."]
        model = self._start.model
        if model.offline:
            why, remedy = (
                ("--offline was given", "Start without --offline to talk to Claude.")
                if model.requested
                else ("No API key is set", "Set ANTHROPIC_API_KEY to talk to Claude.")
            )
            lines.append(
                f"{why}, so the offline demo model answers: try “list files”, "
                f"“read README.md”, “search for import” or “run ls”. {remedy}"
            )
        return "\n".join(lines)

    def refresh_header(self) -> None:
        header, session, start = self.header, self.session, self._start
        model = session.model if session is not None else start.model
        header.model_label = model.label
        header.offline = model.offline
        header.offline_requested = model.requested
        header.cwd = str(start.cwd)
        header.mode = session.permission_mode if session is not None else start.mode
        header.session_id = session.session_id if session is not None else start.session_id
        # The key as bound (the keymap may move it), without loading the commands' key labels.
        self.prompt_input.show_mode(header.mode, self.keymap.get("app.cycle_mode", "shift+tab"))

    # ------------------------------------------------------------ prompts

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self._soon(self._take_input, message.text)

    def _take_input(self, text: str) -> None:
        from .commands import parse_slash

        if text.lstrip().startswith(("!", "#")):  # `!command` and `#text` (tui/shortcuts.py)
            from .shortcuts import run_shortcut

            self.run_worker(run_shortcut(self, text), group="shortcut", exit_on_error=False)
            return
        parsed = parse_slash(text)
        if parsed is not None:
            # In a worker: the app keeps reading keys (Esc stops a /compact) while it runs.
            self.run_slash_later(*parsed)
            return
        found = self.session.find_command(text)
        if found is not None:
            command, arguments = found
            if command.runs_shell:
                # Its `!`-lines run first (they may ask); the prompt follows with their output.
                self.run_worker(self._expand_command(command, arguments), group="command", exit_on_error=False)
            else:
                self.submit_prompt(command.expand(arguments), allowed_tools=command.allowed_tools)
            return
        word = text.strip().split(maxsplit=1)[0]
        if word.startswith("/") and word[1:].replace("-", "").isalpha():
            self.say(f"Unknown command {word} — /help lists the commands", kind="error")
            return
        self.submit_prompt(text)

    async def _expand_command(self, command: CustomCommand, arguments: str) -> None:
        from ..engine import CommandExpansionError

        try:
            text = await self.session.expand_command(command, arguments)
        except CommandExpansionError as exc:
            self.say(str(exc), kind="error")
            return
        self.submit_prompt(text, allowed_tools=command.allowed_tools)

    def submit_prompt(self, text: str, *, allowed_tools: tuple[str, ...] = ()) -> None:
        """Send a prompt now, or after the running turn (it shows as queued meanwhile).
        `allowed_tools`: rules allowed while it runs (a custom command's `allowed-tools`)."""
        from .mentions import Prompt, mentioned_files

        prompt = Prompt(text, mentioned_files(text, self.session.cwd), allowed_tools=allowed_tools)
        self.conversation.queued.append(prompt)
        self.conversation.show_queued()
        self.run_worker(self._run_prompt(prompt), group="prompt", exit_on_error=False)

    def deliver_notifications(self) -> None:
        """A background agent reported while idle: a turn gives the model its report (Claude Code's way)."""
        self.run_worker(self.session.deliver_notifications(), group="prompt", exit_on_error=False)

    async def _run_prompt(self, prompt: Prompt) -> None:
        from .mentions import prompt_content

        async with self._prompt_order:
            try:  # `/mcp__server__prompt args`: the server's prompt is what is sent
                expanded = await self.session.expand_mcp_prompt(prompt.text)
                content = expanded or await prompt_content(prompt, self.session)
            except Exception as exc:
                self.conversation.queued.remove(prompt)
                self.conversation.show_queued()
                what = "Not sent" if prompt.text.lstrip().startswith("/mcp__") else "Could not attach files"
                self.say(f"{what}: {exc}", kind="error")
                return
            await self.session.submit(content, allowed_tools=prompt.allowed_tools)

    async def on_engine_events(self, message: EngineEvents) -> None:
        try:
            await self.conversation.handle(message.events)
        finally:
            message.handled.set()
            self.status_line.poke()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            self.say(f"{event.worker.group} failed: {type(error).__name__}: {error}", kind="error")

    # ------------------------------------------------------------ actions

    def action_abort(self) -> None:
        """Stop the running turn; with nothing running, a second Esc soon after opens /rewind."""
        if self.session is not None and self.session.running:
            self.session.abort()
            return
        now = time.monotonic()
        if now - getattr(self, "_idle_escape_at", float("-inf")) < DOUBLE_ESCAPE:
            self._idle_escape_at = float("-inf")
            self.run_slash_later("rewind")
        else:
            self._idle_escape_at = now

    def action_background_bash(self) -> None:
        """Ctrl+B: the running Bash command goes on in the background and the turn goes on."""
        if self.session is None or not self.session.running or not self.session.background_bash():
            self.notify("No Bash command is running in the foreground.")

    def action_scroll_transcript(self, where: str) -> None:
        transcript = self.transcript
        if where == "page_up":
            transcript.scroll_page_up(animate=False)
        elif where == "page_down":
            transcript.scroll_page_down(animate=False)
        elif where == "home":
            transcript.scroll_home(animate=False)
        else:
            transcript.follow()

    def _copy_selection(self) -> bool:
        """Copy selected text (transcript or input) to the clipboard, OSC 52; False if none."""
        focused = self.focused
        text = focused.selected_text if isinstance(focused, PromptInput) else ""
        if not text:
            text = self.screen.get_selected_text() or ""
        if not text:
            return False
        self.copy_to_clipboard(text)
        self.screen.clear_selection()
        self.notify(f"Copied {len(text):,} characters", timeout=1.5)
        return True

    async def action_interrupt(self) -> None:
        # With text selected, Ctrl+C copies it, as in a terminal.
        if self._copy_selection():
            return
        now = self.clock()
        if now - self._last_interrupt <= QUIT_WINDOW:
            await self.action_quit()
            return
        self._last_interrupt = now
        if self.session is not None and self.session.running:
            self.session.abort()
            self.notify("Stopped. Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)
        else:
            self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    async def action_quit(self) -> None:
        if self.session is not None and self.session.running:
            # Let the abort kill running tools before the loop goes away.
            self.session.abort()
            deadline = time.monotonic() + 2.0
            while self.session.running and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        if self._bridge is not None:
            self._bridge.close()
        self.exit(0)

    async def on_unmount(self) -> None:
        self._save_parsed_css()  # and what widgets mounted since the first frame brought
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(signum)
        if self.session is None:
            return  # quit before the session was made: nothing started
        # The app's loop is the one the session's connections live on: release them here.
        self.session.abort()
        if self._bridge is not None:
            self._bridge.close()
        try:
            await asyncio.wait_for(self.session.aclose(reason="prompt_input_exit"), 5.0)
        except Exception as exc:  # shutting down: report, never raise
            self.log.error(f"closing the session failed: {exc!r}")

    def action_cycle_mode(self) -> None:
        self._soon(self._cycle_mode)

    def _cycle_mode(self) -> None:
        from .widgets.header import MODE_LABELS, MODE_MEANINGS

        mode = self.session.cycle_permission_mode()
        self.notify(f"Permission mode: {MODE_LABELS.get(mode, mode)} — {MODE_MEANINGS.get(mode, '')}", timeout=3)

    def action_toggle_timeline(self) -> None:
        if self.timeline.latest_turn is None:
            # Nothing to hide yet: hiding now would keep the first turn's timeline away unasked.
            self.notify("The timeline shows once the first turn starts.", timeout=2)
            return
        self._timeline_hidden = not self._timeline_hidden
        self.apply_layout()

    def on_resize(self, event: events.Resize) -> None:
        self.apply_layout(event.size)

    def apply_layout(self, size: Size | None = None) -> None:
        """Fit the panes to the terminal: the timeline pane when the transcript keeps
        `MIN_TRANSCRIPT` columns beside it, else a one-line strip; neither before the first
        turn (an empty pane) or once Ctrl+T has hidden them."""
        if not self._widgets_found:
            return  # a Resize can arrive before on_mount has looked the widgets up
        width, height = size or self.size
        timeline = self.timeline
        wide = width - self._pane_width(Size(width, height)) >= MIN_TRANSCRIPT
        shown = timeline.latest_turn is not None and not self._timeline_hidden
        prompt = self.permission
        # A short terminal gives a permission prompt the rows of the strip, the gauge and the footer.
        compact = prompt.display and height < COMPACT_HEIGHT
        self.set_class(compact, "-prompt-compact")
        timeline.display = shown and wide
        self.timeline_strip.display = shown and not wide and not compact
        if prompt.display:
            prompt.fit(width, self._prompt_rows(height, compact), compact=compact)

    def _prompt_rows(self, height: int, compact: bool) -> int:
        """The rows a permission prompt may take: what the header, the input box and the lines
        under it leave, and a few transcript lines unless the terminal is short."""

        def rows(selector: str, least: int = 0) -> int:
            widget = self.query_one(selector)
            return max(widget.outer_size.height, least) if widget.display else 0

        below = rows("#input-area", 3) + rows("#queued") + rows("#activity") + rows("#status-line")
        if not compact:
            below += 1 + 1 + (1 if self.timeline_strip.display else 0)  # gauge, footer, strip
        return height - 1 - below - (1 if compact else 4)  # the header, and transcript lines

    def _pane_width(self, size: Size) -> int:
        """The columns the timeline pane takes at this terminal size (its width in app.tcss)."""
        styles = self.timeline.styles
        width = styles.width.resolve(size, size) if styles.width is not None else 0
        if styles.min_width is not None:
            width = max(width, styles.min_width.resolve(size, size))
        if styles.max_width is not None:
            width = min(width, styles.max_width.resolve(size, size))
        return int(width)

    def action_expand_output(self) -> None:
        """Expand or collapse the latest tool output or thinking block; a tool row takes the
        focus, so ↑ / ↓ walk to earlier ones (`widgets/tool_call.py`)."""
        from .widgets.thinking import ThinkingBlock
        from .widgets.tool_call import ToolCall

        for entry in reversed(self.transcript.children):
            if isinstance(entry, ThinkingBlock) or (
                isinstance(entry, ToolCall) and (entry.has_output or entry.expanded)
            ):
                entry.toggle()
                entry.scroll_visible(animate=False)
                if isinstance(entry, ToolCall):
                    entry.focus(scroll_visible=False)
                return

    def on_tool_call_walk(self, message: Message) -> None:
        """↑ / ↓ on a focused tool row: the focus goes to the tool row that many rows away."""
        from .widgets.tool_call import ToolCall

        rows = [entry for entry in self.transcript.children if isinstance(entry, ToolCall)]
        if self.focused not in rows:
            return
        index = rows.index(self.focused) + message.step
        if 0 <= index < len(rows):
            rows[index].focus(scroll_visible=False)
            rows[index].scroll_visible(animate=False)

    def action_focus_input(self, typed: str = "") -> None:
        """Back to the input (Esc on a tool row), with what was typed meanwhile."""
        self.prompt_input.focus()
        if typed:
            self.prompt_input.insert(typed)

    def action_show_transcript(self) -> None:
        self._soon(self._show_transcript)

    def _show_transcript(self) -> None:
        from .export import history_markdown

        title = f"Transcript · session {self.session.session_id[:8]} · Esc closes · Ctrl+S exports"
        from .screens import TranscriptScreen  # Ctrl+O only: kept off the first frame's path

        self.push_screen(TranscriptScreen(history_markdown(self.session.history), title))

    def action_export_transcript(self) -> None:
        self._soon(self._export_transcript)

    def _export_transcript(self) -> None:
        # To the clipboard: nothing is written into the project unasked (/export FILE writes a file).
        text = self.transcript_markdown()
        self.copy_to_clipboard(text)
        self.notify(f"Conversation copied ({len(text):,} characters); /export FILE writes it to a file")

    def on_kitty_keyboard(self, message: Message) -> None:
        """The terminal reports Shift+Enter apart from Enter (`terminal_driver.py`): the hint may name it."""
        self.prompt_input.shift_enter_reported()

    def on_permission_prompt_settled(self, message: PermissionPrompt.Settled) -> None:
        self.prompt_input.focus()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from .commands import palette_entries

        for entry in palette_entries(self.key_display):
            if entry.slash:
                yield SystemCommand(entry.title, entry.help, partial(self.run_slash_later, entry.slash))
            else:
                action = self._bindings_by_id()[entry.binding_id].action
                yield SystemCommand(entry.title, entry.help, partial(self.run_action, action))
        # Only agent-tui's own entries: Textual's (theme, screenshot, maximize...) are not for this app.

    def run_slash_later(self, name: str, arg: str = "") -> None:
        from .commands import run_slash

        def start() -> None:
            # What the command shows comes into view, even with the transcript scrolled up.
            self.run_worker(self.transcript.show_output_of(run_slash(self, name, arg)), group="slash",
                            exit_on_error=False)

        self._soon(start)

    def key_display(self, binding_id: str) -> str:
        """The key(s) bound to `binding_id` now (the keymap's, else the default), as /help shows them."""
        keys = self.keymap.get(binding_id)
        if keys is None:
            binding = self._bindings_by_id().get(binding_id)
            keys = binding.key if binding is not None else ""
        from .commands import key_label

        return key_label(keys)

    @classmethod
    def _bindings_by_id(cls) -> dict[str, Binding]:
        owners = (cls, PromptInput, PermissionPrompt)
        return {b.id: b for owner in owners for b in owner.BINDINGS if isinstance(b, Binding) and b.id}

    # ------------------------------------------------------------ used by slash commands

    def say(self, text: str, kind: str = "info") -> None:
        """A line in the transcript from the app itself (not the model)."""
        self.transcript.add(Notice(text, kind=kind))

    async def show_markdown(self, text: str) -> None:
        from .widgets.markdown_lite import FrozenMarkdown

        # The answers' renderer: its tables fit the transcript's width too.
        await self.transcript.add(FrozenMarkdown(text, classes="note"))

    async def compact_conversation(self, instructions: str) -> None:
        """`/compact`: a live status line while the summary is written; Esc cancels it."""
        if self.session.running:
            self.say("A turn is running: press Esc first, or wait, then /compact.", kind="error")
            return
        self.conversation.show_compacting(CompactionStatus("manual", self.clock()))
        try:
            # Progress and the result arrive as events on the bus.
            await self.session.compact(instructions)
        finally:
            self.conversation.show_compacting(None)

    async def clear_conversation(self) -> None:
        if self.session.running:
            self.say("A turn is running: press Esc first, then /clear.", kind="error")
            return
        self.session.clear()
        await self.clear_view()
        # A persisted session goes on under a new id: the header shows it.
        self.refresh_header()
        self.say("Conversation cleared.")

    async def clear_view(self) -> None:
        """Empty the transcript, timeline and gauge (the engine's history is not touched)."""
        await self.conversation.clear()
        self.apply_layout()

    async def replay(self, events: list) -> None:
        """Apply stored (or made-up) events through the same handlers live events take
        (never via the bus: the store would write them again)."""
        from .bridge import EngineEvents

        await self.on_engine_events(EngineEvents(events, asyncio.Event()))

    async def load_history(self, events: list) -> None:
        """Rebuild the view of a resumed session from its stored events, as data: the last
        prompts first, their screen mounted and drawn at once; then the rest, put in front of them.
        The loop is handed back every `REPLAY_SLICE`, so keys typed meanwhile are taken."""
        split = _tail_split(events)
        await self._draw_last_screen(events[split:], more=bool(split))
        self._work_ahead()
        await self._load_earlier(events[:split])

    async def _draw_last_screen(self, events: list, *, more: bool, wait: bool = True) -> None:
        """Mount and draw `events`, the last prompts; `more`: earlier ones load after this screen.
        `wait`: until that screen is drawn (not in the app's mounting, whose frames wait for its end)."""
        transcript, timeline = self.transcript, self.timeline
        transcript.loading = timeline.loading = True
        try:
            await self._replay_in_slices(events)
        finally:
            mounted = transcript.show_tail(earlier=more)
            timeline.finish_loading()
            self.apply_layout()
            self.conversation.refresh_strip()
        if more:
            # The last screen is mounted and drawn before the rest loads: mounting it takes many turns
            # of the loop, and each would otherwise wait for a slice of the loading (docs/architecture.md §8).
            await mounted
            if wait:
                await transcript.tail_drawn()

    async def _load_earlier(self, events: list) -> None:
        """Load `events` (what comes before the last screen) in front of the transcript."""
        from .conversation import Conversation

        if events:
            older = Conversation(self, self.session, lambda: self.clock(), self.refresh_header,
                                 history_of=self.conversation)
            self.history_loading = True
            try:
                await self._replay_in_slices(events, older)
                self.conversation.take_history(older)
            finally:
                self.history_loading = False

    async def _replay_in_slices(self, events: list, conversation: Any = None) -> None:
        from .safe_text import safe_event

        conversation = conversation or self.conversation
        handed_back = time.perf_counter()
        for start in range(0, len(events), REPLAY_BATCH):
            # As the bridge does: no stored text reaches the screen with escape sequences in it.
            await conversation.handle([safe_event(e) for e in events[start : start + REPLAY_BATCH]])
            if time.perf_counter() - handed_back > REPLAY_SLICE:
                await asyncio.sleep(0)
                handed_back = time.perf_counter()

    async def _replay_resumed(self) -> None:
        if self._resuming():
            try:
                if self._drawn_ahead is not None:
                    self._work_ahead()
                    await self._load_earlier(self._drawn_ahead())
                else:
                    await self.load_history(self.session.replay_events())
            finally:
                self._work_ahead()  # (done already, unless the load failed before its last screen)
            # The first request's work on the whole history, done now in a thread (a prompt waits for it).
            self.session.prepare_history()
            self.say(f"Resumed session {self.session.session_id[:8]} ({len(self.session.history)} messages).")
            if self.session.fork_notice:
                self.say(self.session.fork_notice, kind="error")
        if self._pick_session:
            from .commands import run_slash

            await run_slash(self, "resume", "")
        if self._initial_prompt:
            self.submit_prompt(self._initial_prompt)

    def transcript_markdown(self) -> str:
        """The conversation as Markdown, as /export writes it."""
        from .export import history_markdown

        return history_markdown(self.session.history, title=f"agent-tui session {self.session.session_id}")

    def export_transcript(self, target: Path) -> Path | None:
        text = self.transcript_markdown()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.say(f"Could not write {target}: {exc}", kind="error")
            return None
        return target


def run_tui(
    session: Session | SessionStart,
    *,
    initial_prompt: str | None = None,
    theme: str | None = None,
    keymap: dict[str, str] | None = None,
    pick_session: bool = False,
    mcp_json_pending: dict[str, dict] | None = None,
    settings: Settings | None = None,
) -> int:
    """Run the full-screen app until the person quits; the exit code."""
    from . import collector
    from .terminal import TerminalGuard

    collector.pace()
    app = AgentApp(session, initial_prompt=initial_prompt, theme=theme, keymap=keymap, pick_session=pick_session,
                   mcp_json_pending=mcp_json_pending, settings=settings)
    guard = app.terminal_guard = TerminalGuard(app.save_session_now)
    guard.install()
    try:
        result = app.run()
    finally:
        guard.uninstall()
    if guard.status is not None:
        return guard.status  # killed, or the terminal is gone: nothing more to print
    session = app.session  # None if the app closed before it was made
    if session is not None and session.persisted and session.history:
        # As Claude Code does: the way back into this conversation, left in the terminal.
        print(f"Resume this session with:\nagent-tui -r {session.session_id}")
    if app.return_code:
        return app.return_code
    return result or 0
