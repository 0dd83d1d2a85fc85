"""The footer recomposes only when the keys it shows change (widgets/footer.py)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer as TextualFooter
from textual.widgets import Input

from agent_tui.tui.widgets.footer import Footer

from .helpers import wait_until


class Plain(Input):
    pass


class WithKey(Input):
    BINDINGS = [Binding("ctrl+y", "noop", "Yank it")]

    def action_noop(self) -> None:
        pass


class Counted(Footer):
    recomposes = 0

    async def recompose(self) -> None:
        Counted.recomposes += 1
        await super().recompose()


class FooterApp(App[None]):
    BINDINGS = [Binding("ctrl+q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Plain(id="a")
        yield Plain(id="b")
        yield WithKey(id="c")
        yield Counted()


def shown(app: App) -> str:
    return " ".join(str(key.render()) for key in app.query("FooterKey"))


async def test_the_footer_recomposes_when_its_keys_change_and_not_when_focus_moves_between_the_same_keys():
    Counted.recomposes = 0
    app = FooterApp()
    async with app.run_test(size=(100, 10)) as pilot:
        await wait_until(pilot, lambda: "Quit" in shown(app))
        await pilot.pause()
        # The start focuses twice (Textual's auto focus, then the app's): one recompose, not one per notice.
        assert Counted.recomposes == 1
        app.query_one("#b").focus()
        await pilot.pause()
        await pilot.pause()
        assert Counted.recomposes == 1  # the same keys: nothing made again
        app.query_one("#c").focus()
        await wait_until(pilot, lambda: "Yank it" in shown(app))
        assert Counted.recomposes == 2
        app.query_one("#a").focus()
        await wait_until(pilot, lambda: "Yank it" not in shown(app))
        assert Counted.recomposes == 3
        assert isinstance(app.query_one(Counted), TextualFooter)
