"""Extended thinking in the transcript: one dimmed line, the whole text on Ctrl+O.

The model's thinking streams as `thinking_delta` events before its answer.  It
is kept collapsed, as Claude Code keeps it: a line that says the model is
thinking and how much it has thought.  Expanded (Ctrl+O, or a click), the text
is shown dimmed and italic under that line, and keeps streaming there.  One
`Static`: the text is joined only when it is drawn expanded.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual import events
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static


class ThinkingBlock(Static):
    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self) -> None:
        super().__init__("", markup=False, classes="thinking")
        self._parts: list[str] = []
        self._chars = 0
        self.finished = False
        self.update(self._content())

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def add(self, text: str) -> None:
        self._parts.append(text)
        self._chars += len(text)
        self.update(self._content())

    def finish(self) -> None:
        self.finished = True
        self.update(self._content())

    def toggle(self) -> None:
        self.expanded = not self.expanded

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(expanded, "-expanded")
        self.update(self._content())

    def remake(self) -> Callable[[], ThinkingBlock]:
        return partial(ThinkingBlock.of, self.text, finished=self.finished, expanded=self.expanded)

    @classmethod
    def of(cls, text: str, *, finished: bool, expanded: bool) -> ThinkingBlock:
        """A block showing `text` as one was left (the transcript makes it again)."""
        block = cls()
        block._parts, block._chars, block.finished = [text], len(text), finished
        block.set_reactive(ThinkingBlock.expanded, expanded)
        block.set_class(expanded, "-expanded")
        block.update(block._content())
        return block

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.toggle()

    def _content(self) -> Content:
        verb = "Thought" if self.finished else "Thinking…"
        words = f"{self._chars:,} characters" if self._chars else ""
        marker = "▾" if self.expanded else "▸"
        head = Content.assemble(("✻ ", "$text-accent 60%"), verb, (f"  {words}" if words else "", "$text-muted"),
                                (f"  {marker}", "$text-muted"))
        if not self.expanded or not self._chars:
            return head
        return Content("\n").join([head, Content(self.text.strip("\n")).stylize("italic")])
