"""The footer: Textual's, recomposed only when the keys it shows change.

Textual's `Footer` makes all its keys again each time the screen says its bindings changed
(every focus change), once per notice even when several come before one refresh; a key's
making applies its styles, and a footer's worth of them costs tens of milliseconds, which
a resumed session paid twice before its last screen.  This one recomposes once per refresh,
and only when the keys, their descriptions, whether they are enabled or the key display differ.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recompose_queued = False
        self._shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        # As Textual's, but a recompose already queued takes this change too.
        self._bindings_ready = True
        if not screen.app.app_focus or self._recompose_queued:
            return
        if self.is_attached and screen is self.screen:
            self._recompose_queued = True
            self.call_after_refresh(self._recompose_if_changed)

    def _keys(self) -> tuple:
        """What `compose` draws from: the shown bindings, whether each is enabled, their tooltips."""
        app = self.app
        return (
            self.compact,
            self.show_command_palette,
            tuple((binding, enabled, tooltip, app.get_key_display(binding))
                  for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()),
        )

    async def _recompose_if_changed(self) -> None:
        self._recompose_queued = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys != self._shown:
            self._shown = keys
            await self.recompose()
