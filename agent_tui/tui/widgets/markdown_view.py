"""Textual's Markdown widget with what a coding transcript needs on top.

Table columns follow their alignment row (`:---`, `:---:`, `---:`), which
Textual's table ignores; code blocks wrap at the pane's edge instead of
being cut there (app.tcss).
"""

from __future__ import annotations

from textual.widgets import Markdown
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownTable,
    MarkdownTableContent,
    MarkdownTH,
)

_ALIGN = {"text-align:left": "left", "text-align:center": "center", "text-align:right": "right"}


def column_alignments(table: MarkdownBlock) -> list[str]:
    """"left" | "center" | "right" per column, from the header cells' tokens."""
    out: list[str] = []
    stack = list(table._blocks)
    while stack:
        block = stack.pop(0)
        if isinstance(block, MarkdownTH):
            out.append(_ALIGN.get(str(block._token.attrGet("style") or ""), "left"))
        stack[:0] = block._blocks
    return out


class AlignedTable(MarkdownTable):
    def on_mount(self) -> None:
        self.call_after_refresh(self._align)

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        await super()._update_from_block(block)
        self._align()

    def _align(self) -> None:
        alignments = column_alignments(self)
        if not alignments or all(a == "left" for a in alignments):
            return
        for content in self.query(MarkdownTableContent):
            for n, cell in enumerate(content.children):
                cell.styles.text_align = alignments[n % len(alignments)]  # type: ignore[assignment]


class AgentMarkdown(Markdown):
    BLOCKS = {**Markdown.BLOCKS, "table_open": AlignedTable}
