"""The floor under agent-tui's first paint: the smallest Textual app with what every
full-screen agent shows (a header, a line of text, an input, a footer), on the same
Python and Textual.  `bench_tui` starts it beside agent-tui; agent-tui's first paint
minus this one is what agent-tui itself adds."""

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Input, Static


class Floor(App):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("A minimal Textual app: the floor under a full-screen agent's first paint.")
        yield Input(placeholder="Ask anything")
        yield Footer()


if __name__ == "__main__":
    Floor().run()
