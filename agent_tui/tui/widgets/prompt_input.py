"""The prompt input: a multi-line TextArea with history and completion.

Enter sends; Ctrl+J, `\\` then Enter, and Shift+Enter where the terminal tells it
from Enter (the kitty keyboard protocol) insert a newline: the hint names
Shift+Enter only there.  A paste of many lines shows as one "[Pasted N lines]"
token and is sent whole.  Up on the first row and
Down on the last walk the history.  Typing `/` at the start offers the slash
commands, `@` offers paths under the working directory (and MCP servers' resources as
`@server:uri`); Tab or Enter takes
the highlighted one, Esc closes the menu.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

if TYPE_CHECKING:  # the commands' table and path completion load after the first frame
    from ..commands import SlashCommand
    from ..file_index import FileIndex

_SLASH_WORD = re.compile(r"^/(\S*)$")
# Candidates the `@` menu offers at most.
MAX_FILE_CANDIDATES = 12
# Seconds after which a search that finds nothing reads the file list again first.
FILES_RECHECK = 2.0
# A paste of more lines than this shows as one "[Pasted N lines]" token.
PASTE_FOLD_LINES = 10
HINT = "Ask anything · / commands · @ files · Enter sends · {newline} newline"
_MENTION_TAIL = re.compile(r"(?:^|\s)@((?:\\ |[^\s])*)$")


@dataclass(frozen=True)
class Completion:
    replace_from: int  # column on the cursor row where the replaced text starts
    text: str
    final: bool  # False for a directory: keep completing inside it


class CompletionMenu(OptionList, can_focus=False):
    """The candidates; driven by the input, never focused."""


class PromptInput(TextArea):
    BINDINGS = [
        Binding("enter", "submit", "Send", priority=True, id="input.submit"),
        Binding("shift+enter,ctrl+j", "newline", "Newline", show=False, id="input.newline"),
        Binding("up", "up", "History", show=False, id="input.history_previous"),
        Binding("down", "down", "History", show=False, id="input.history_next"),
        Binding("tab", "complete", "Complete", show=False, id="input.complete"),
        Binding("escape", "close_menu", "Close menu", show=False, id="input.close_menu"),
        # The input rarely needs a page: these keys scroll the transcript.
        Binding("pageup", "app.scroll_transcript('page_up')", "Scroll up", show=False, id="input.page_up"),
        Binding("pagedown", "app.scroll_transcript('page_down')", "Scroll down", show=False, id="input.page_down"),
        Binding("home", "home", "Top", show=False, id="input.home"),
        Binding("end", "end", "Bottom", show=False, id="input.end"),
        # An image on the system clipboard attaches (tui/clipboard.py); otherwise the usual paste.
        Binding("ctrl+v", "paste_clipboard", "Paste", show=False, id="input.paste"),
    ]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class FilesOffered(Message):
        """The `@` menu took the files found for `partial` (tests and timing wait on it)."""

        def __init__(self, partial: str, count: int) -> None:
            super().__init__()
            self.partial = partial
            self.count = count

    class _FilesFound(Message):
        """The search thread's answer for `partial` (posted from that thread)."""

        bubble = False

        def __init__(self, partial: str, paths: list[str]) -> None:
            super().__init__()
            self.partial = partial
            self.paths = paths

    def __init__(self, cwd: Path, commands: Callable[[], Sequence[SlashCommand]], *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=HINT.format(newline="Ctrl+J"),
        )
        self.cwd = cwd
        # The slash commands on offer now (the project's may change while the app runs).
        self._commands = commands
        self.prompt_history: list[str] = []
        self._history_index: int | None = None
        self._draft = ""
        self._completions: list[Completion] = []
        self._labels: list[Content] = []  # what the menu shows for each completion
        self._menu: CompletionMenu | None = None
        # `@server:uri` completions for what follows `@`: (mention, what it is); the app sets it.
        self.resource_mentions: Callable[[str], list[tuple[str, str]]] = lambda partial: []
        # The project's files for fuzzy `@` completion (read when first needed, `file_index.py`).
        self._files: FileIndex | None = None
        # The newest `@` word the search thread is to look for, and whether that thread runs: one
        # thread, one search at a time, each for the newest word (`_search_newest`).
        self._wanted: str | None = None
        # The text and cursor the last Changed message was handled for.
        self._handled: tuple[str, tuple[int, int]] | None = None
        self._searching = False
        self._search_lock = threading.Lock()
        # "[Pasted N lines]" tokens in the text, and what each stands for.
        self._pastes: dict[str, str] = {}

    def shift_enter_reported(self) -> None:
        """The terminal reports Shift+Enter apart from Enter (kitty keyboard protocol): say so."""
        self.placeholder = HINT.format(newline="Shift+Enter")

    def _echo(self) -> None:
        """Draw the input's change now, not at the screen's next update, which may first lay out
        what a tool burst mounted meanwhile and draw all it moved (docs/architecture.md §8): the
        screen as last laid out, with the input as it is now; that update redraws it anyway."""
        app, screen = self.app, self.screen
        if app.is_inline or app._batch_count or screen is not app.screen or not self.size:
            return
        compositor = screen._compositor
        if self not in compositor.visible_widgets:
            return
        try:
            compositor.update_widgets({self})
            app._display(screen, compositor.render_update(screen_stack=app._background_screens))
        except Exception:  # a widget drawn over the input was removed since: the next update draws it
            self.refresh()

    def _on_paste(self, event: events.Paste) -> None:
        """A long paste goes in as one token (the box stays readable); sent, it is the whole text.
        A short one is left to TextArea's own handler (Textual calls it next, unless prevented)."""
        # Terminals (and tmux) send a pasted line break as CR.
        pasted = event.text.replace("\r\n", "\n").replace("\r", "\n")
        lines = len(pasted.splitlines())
        if lines <= PASTE_FOLD_LINES or self.read_only:
            return
        event.prevent_default()
        token, count = f"[Pasted {lines} lines]", 1
        while token in self._pastes:
            count += 1
            token = f"[Pasted {lines} lines #{count}]"
        self._pastes[token] = pasted
        start, end = self.selection
        self.replace(token, start, end)

    def _expanded(self, text: str) -> str:
        """`text` with every paste token still in it replaced by what was pasted."""
        for token, pasted in self._pastes.items():
            text = text.replace(token, pasted)
        return text

    def show_mode(self, mode: str, keys: str) -> None:
        """The permission mode on the box's bottom edge, beside what is typed (the header is cut at
        80 columns), with the key that changes it."""
        from .header import MODE_LABELS

        self.border_subtitle = f"⏵ {MODE_LABELS.get(mode, mode)} ({keys.split(',')[0]} changes)"
        for name in MODE_LABELS:
            self.set_class(name == mode, f"-mode-{name}")

    # ------------------------------------------------------------ clipboard images

    def action_paste_clipboard(self) -> None:
        self.run_worker(self._paste_clipboard(), group="paste", exclusive=True, exit_on_error=False)

    async def _paste_clipboard(self) -> None:
        """The clipboard's image goes in as the path of the file it was saved to, which attaches it
        when sent (as a pasted image path does); with no image, or no clipboard tool, Ctrl+V pastes
        as TextArea does."""
        from ..clipboard import clipboard_image, clipboard_tools, save_pasted_image

        data = await clipboard_image() if clipboard_tools() else None
        if not data:
            self.action_paste()
            return
        path = await asyncio.to_thread(save_pasted_image, data)
        word = f"'{path}'" if " " in str(path) else str(path)
        row, column = self.cursor_location
        before = self.document.get_line(row)[:column]
        self.insert(("" if not before or before.endswith(" ") else " ") + word + " ")

    # ------------------------------------------------------------ menu

    @property
    def menu(self) -> CompletionMenu:
        self.prepare_menu()
        assert self._menu is not None
        return self._menu

    def prepare_menu(self) -> None:
        """Mount the menu above the input, hidden. Not for the first frame: the app calls
        this once that frame is out (and the first candidates would, were they sooner)."""
        if self._menu is None:
            self._menu = CompletionMenu(id="completion-menu")
            self._menu.display = False
            self.parent.mount(self._menu, before=self)
            # The file list is read now, in a thread, so the first `@` search need not wait for it.
            from ..file_index import FileIndex

            files = self._files = FileIndex(self.cwd)
            self.run_worker(files.refresh, thread=True, group="file-search", exit_on_error=False)

    @property
    def menu_open(self) -> bool:
        return bool(self._completions) and self._menu is not None and self._menu.display

    def _hide_menu(self) -> None:
        if self._menu is not None:
            self._menu.display = False

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        # Keys typed in a burst are all applied before the first of their Changed messages is
        # handled: the first one shows the text as it now is, and the rest have nothing to add.
        state = (self.document.text, self.cursor_location)
        if state == self._handled:
            return
        self._handled = state
        self._update_completions()
        # A key typed, deleted or pasted shows now (a menu it opens comes with the next layout).
        self._echo()

    def _update_completions(self) -> None:
        row, column = self.cursor_location
        line = self.document.get_line(row)[:column]
        completions: list[Completion] = []
        labels: list[Content] = []
        slash = _SLASH_WORD.match(line) if row == 0 and self.document.line_count == 1 else None
        if slash:
            word = slash.group(1)
            for command in self._commands():
                if command.name.startswith(word) and line != f"/{command.name}":
                    completions.append(Completion(0, f"/{command.name} ", True))
                    labels.append(
                        Content.assemble((f"/{command.name:<12}", "bold"), (command.help, "$text-muted"))
                    )
        else:
            mention = _MENTION_TAIL.search(line)
            if mention:
                from ..mentions import path_candidates

                partial = mention.group(1)
                start = column - len(partial) - 1
                # The folder walk answers at once; the fuzzy search over every file follows.
                for path in path_candidates(partial, self.cwd):
                    final = not path.endswith("/")
                    completions.append(Completion(start, f"@{path}" + (" " if final else ""), final))
                    labels.append(Content(f"@{path}"))
                for resource, about in self.resource_mentions(partial):
                    completions.append(Completion(start, f"@{resource} ", True))
                    labels.append(Content.assemble(f"@{resource} ", (about, "$text-muted")))
                if partial and "/" not in partial[:1]:
                    taken = {c.text.strip() for c in completions}
                    for path in self._search_files(partial):
                        if f"@{path}" not in taken and len(completions) < MAX_FILE_CANDIDATES:
                            completions.append(Completion(start, f"@{path} ", True))
                            labels.append(Content(f"@{path}"))
        self._show_menu(completions, labels)

    def _show_menu(self, completions: list[Completion], labels: list[Content]) -> None:
        self._completions = completions
        self._labels = labels
        if completions:
            menu = self.menu
            menu.clear_options()
            menu.add_options(Option(label) for label in labels)
            menu.highlighted = 0
            menu.display = True
        elif self._menu is not None:
            self._menu.clear_options()
            self._menu.display = False

    # ------------------------------------------------------------ fuzzy @ files

    def _mention_now(self) -> tuple[str, int] | None:
        """The `@` word being typed at the cursor (its text after `@`, where the `@` is), if any."""
        row, column = self.cursor_location
        mention = _MENTION_TAIL.search(self.document.get_line(row)[:column])
        if mention is None:
            return None
        return mention.group(1), column - len(mention.group(1)) - 1

    def _search_files(self, partial: str) -> list[str]:
        """The project's files holding `partial` whole, found now (a millisecond or two); those
        holding its characters in order follow from the search thread, and the menu takes them
        if the same word is still being typed (`file_index.py`)."""
        from ..file_index import FileIndex

        if self._files is None:
            self._files = FileIndex(self.cwd)
        files = self._files
        # Ranking a few hundred keeps a keystroke quick (a letter or two matches thousands).
        quick = files.search(partial, MAX_FILE_CANDIDATES, fuzzy=False, rank_at_most=300) if files.read_at else []
        if len(quick) < MAX_FILE_CANDIDATES or files.stale:
            with self._search_lock:
                self._wanted = partial
                start, self._searching = not self._searching, True
            if start:  # after the frame showing `quick`: the thread would slow that frame down
                self.call_after_refresh(
                    self.run_worker, self._search_newest, thread=True, group="file-search", exit_on_error=False
                )
        return quick

    def _search_newest(self) -> None:
        """The search thread: search for the newest word asked for until none is waiting. Keys
        typed faster than the searches run are searched for only as the newest word, so a burst
        of keys costs one or two searches, not one per key, and no thread queue holds the
        interpreter's lock from the keys' handling."""
        from ..file_index import STALE_AFTER

        files = self._files
        assert files is not None
        while True:
            with self._search_lock:
                partial, self._wanted = self._wanted, None
                if partial is None:
                    self._searching = False
                    return
            if files.stale:  # or still being read after the first frame: wait for that read
                files.refresh(unless_younger_than=STALE_AFTER)
            found = files.search(partial, MAX_FILE_CANDIDATES)
            if not found and files.age > FILES_RECHECK:  # nothing in a list read a while ago: new files?
                files.refresh(unless_younger_than=FILES_RECHECK)
                found = files.search(partial, MAX_FILE_CANDIDATES)
            if self._wanted is None:  # no newer word meanwhile
                self.post_message(self._FilesFound(partial, found))

    def _on_prompt_input__files_found(self, message: _FilesFound) -> None:
        self._offer_files(message.partial, message.paths)

    def _offer_files(self, partial: str, paths: list[str]) -> None:
        """Add the files found for `partial` after the folder walk's candidates."""
        now = self._mention_now()
        if now is None or now[0] != partial or not self.has_focus:
            return  # typed on, or sent: the answer is for a word no longer there
        start = now[1]
        pairs = zip(self._completions, self._labels, strict=False)
        shown = [(c, label) for c, label in pairs if c.replace_from == start]
        taken = {c.text.strip() for c, _ in shown}
        for path in paths:
            text = f"@{path}"
            if text not in taken:
                shown.append((Completion(start, text + " ", True), Content(text)))
                taken.add(text)
        shown = shown[:MAX_FILE_CANDIDATES]
        self._show_menu([c for c, _ in shown], [label for _, label in shown])
        self.post_message(self.FilesOffered(partial, len(shown)))

    def _accept(self) -> None:
        menu = self.menu
        index = menu.highlighted or 0
        if not (0 <= index < len(self._completions)):
            return
        completion = self._completions[index]
        row, column = self.cursor_location
        self.replace(completion.text, (row, completion.replace_from), (row, column))
        if completion.final:
            self._completions = []
            self._hide_menu()

    def _typed_in_full(self) -> bool:
        """The highlighted candidate is exactly what was typed (then Enter sends)."""
        index = self.menu.highlighted or 0
        if not (0 <= index < len(self._completions)):
            return False
        completion = self._completions[index]
        row, column = self.cursor_location
        typed = self.document.get_line(row)[completion.replace_from : column]
        return completion.final and typed.rstrip() == completion.text.rstrip()

    def _is_command(self, text: str) -> bool:
        """`text` is a built-in slash command, typed out (with or without an argument)."""
        name = text.strip().partition(" ")[0]
        return any(f"/{c.name}" == name and c.run is not None for c in self._commands())

    def action_close_menu(self) -> None:
        self._completions = []
        self._hide_menu()

    def action_complete(self) -> None:
        if self.menu_open:
            self._accept()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_menu":
            # Without a menu, Esc goes on to the app (abort the running turn).
            return self.menu_open
        return True

    # ------------------------------------------------------------ keys

    def action_submit(self) -> None:
        # A priority binding runs as soon as the app reads Enter, while keys typed just
        # before it may still wait in this widget's queue: submit after them.
        self.call_later(self._submit)

    def _submit(self) -> None:
        # The menu may still show what was typed a few keys ago (its update waits behind
        # them in the queue): decide on the text as it is now, and never replace a command
        # that was typed out in full.
        self._update_completions()
        if self.menu_open and not self._is_command(self.text) and not self._typed_in_full():
            self._accept()
            return
        row, column = self.cursor_location
        if column and self.document.get_line(row)[column - 1] == "\\":
            # `\` then Enter: a newline in place of the backslash, as in Claude Code.
            self.replace("\n", (row, column - 1), (row, column))
            return
        text = self._expanded(self.text)
        self._pastes.clear()
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._history_index = None
        self._draft = ""
        self.clear()
        self.action_close_menu()
        self.post_message(self.Submitted(text))

    async def action_home(self) -> None:
        """Start of the line; with nothing typed, the top of the transcript."""
        if self.text:
            self.action_cursor_line_start()
        else:
            await self.app.run_action("scroll_transcript('home')")

    async def action_end(self) -> None:
        """End of the line; with nothing typed, the bottom of the transcript (and follow it)."""
        if self.text:
            self.action_cursor_line_end()
        else:
            await self.app.run_action("scroll_transcript('end')")

    def action_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end)

    def action_up(self) -> None:
        if self.menu_open:
            self.menu.action_cursor_up()
        elif self.navigator.is_first_wrapped_line(self.cursor_location) and self.prompt_history:
            self._recall(-1)
        else:
            self.action_cursor_up()

    def action_down(self) -> None:
        if self.menu_open:
            self.menu.action_cursor_down()
        elif self.navigator.is_last_wrapped_line(self.cursor_location) and self._history_index is not None:
            self._recall(+1)
        else:
            self.action_cursor_down()

    def _recall(self, step: int) -> None:
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.prompt_history) - 1
        else:
            index = self._history_index + step
        if index < 0:
            return
        if index >= len(self.prompt_history):
            self._history_index = None
            self.load_text(self._draft)
        else:
            self._history_index = index
            self.load_text(self.prompt_history[index])
        self.move_cursor(self.document.end)
        self.action_close_menu()

    def _on_blur(self, event: events.Blur) -> None:
        self.action_close_menu()


class InputArea(Vertical):
    """The input box, and the completion menu above it while there are candidates."""

    def __init__(self, cwd: Path, commands: Callable[[], Sequence[SlashCommand]], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._cwd = cwd
        self._commands = commands

    def compose(self) -> ComposeResult:
        yield PromptInput(self._cwd, self._commands, id="prompt-input")
