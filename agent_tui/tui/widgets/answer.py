"""The part of an answer still streaming: Textual's Markdown, fed by a `MarkdownStream`.

Its own module so that Textual's Markdown widget and markdown-it load with the
first answer, not before the first paint.
"""

from __future__ import annotations

from .markdown_view import AgentMarkdown


class AssistantText(AgentMarkdown):
    """One run of assistant text, written through a `MarkdownStream`."""
