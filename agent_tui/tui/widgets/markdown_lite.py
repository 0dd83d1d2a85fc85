"""Markdown as one widget.

Textual's `Markdown` builds a widget per block (a list item, a table cell):
too heavy for the hundreds of blocks a long answer or a long session leaves
behind, and for an answer that grows many times a second.  Answers are drawn
instead as styled `Content` built from markdown-it's tokens, with the theme's
variables: `FrozenMarkdown` (one `Static`) for finished text, and the
streaming `AssistantText` (`answer.py`) with the same renderer, so text looks
the same while it streams and after.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache, partial
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.content import Content, Span
from textual.visual import Visual
from textual.widgets import Static

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from pygments.lexer import Lexer
    from textual.css.styles import RulesMap
    from textual.selection import Selection
    from textual.strip import Strip
    from textual.style import Style
    from textual.visual import RenderOptions

_HEADING_STYLES = {
    "h1": "$markdown-h1-color $markdown-h1-text-style",
    "h2": "$markdown-h2-color $markdown-h2-text-style",
    "h3": "$markdown-h3-color $markdown-h3-text-style",
    "h4": "$markdown-h4-color $markdown-h4-text-style",
    "h5": "$markdown-h5-color $markdown-h5-text-style",
    "h6": "$markdown-h6-color $markdown-h6-text-style",
}
_INLINE_STYLES = {"strong": "bold", "em": "italic", "s": "strike", "link": "underline $text-secondary"}


def _inline(token: Token) -> Content:
    parts: list[Content] = []
    styles: list[str] = []
    for child in token.children or []:
        kind = child.type
        if kind.endswith("_open") and kind[:-5] in _INLINE_STYLES:
            styles.append(_INLINE_STYLES[kind[:-5]])
        elif kind.endswith("_close") and kind[:-6] in _INLINE_STYLES:
            if styles:
                styles.pop()
        elif kind == "code_inline":
            parts.append(Content.styled(child.content, "$text-accent on $boost"))
        elif kind == "softbreak":
            parts.append(Content(" "))
        elif kind == "hardbreak":
            parts.append(Content("\n"))
        elif kind == "image":
            parts.append(Content.styled(f"[{child.content or 'image'}]", "italic"))
        elif child.content:
            parts.append(Content.styled(child.content, " ".join(styles)) if styles else Content(child.content))
    return Content("").join(parts)


def _aligned(cell: Content, width: int, align: str) -> Content:
    """`cell` padded to `width` as its column's alignment row asks (`:-:` centre, `-:` right)."""
    room = width - cell.cell_length
    if align == "right":
        return cell.pad_left(room)
    if align == "center":
        return cell.pad_left(room // 2).pad_right(room - room // 2)
    return cell.pad_right(room)


# Widths a finished answer keeps its layout for.
LAYOUTS_KEPT = 3
_CELL_GAP = " │ "
# A squeezed column is never narrower than its longest word, up to this many cells
# (longer words, such as paths, are broken inside the cell).
_WORD_FLOOR = 14
_MIN_COLUMN = 3


def _widest_line(cell: Content) -> int:
    return max((line.cell_length for line in cell.split("\n")), default=0)


def _longest_word(cell: Content) -> int:
    return max((cell_len(word) for word in cell.plain.split()), default=0)


def _shared_out(natural: list[int], floors: list[int], room: int) -> list[int] | None:
    """Column widths that fit `room` cells (the gaps between columns included): the natural
    widths when they fit, else each column squeezed towards its floor in proportion to what it
    would lose; None when even the floors do not fit."""
    room -= len(_CELL_GAP) * (len(natural) - 1)
    if sum(natural) <= room:
        return natural
    if sum(floors) > room:
        return None
    widths = list(floors)
    wants = [n - f for n, f in zip(natural, floors, strict=True)]
    spare, wanted = room - sum(floors), sum(wants)
    for c, want in enumerate(wants):
        widths[c] += spare * want // wanted
    left = room - sum(widths)
    # The cells rounding left over go to the columns still furthest from their natural width.
    for c in sorted(range(len(widths)), key=lambda c: widths[c] - natural[c])[:left]:
        widths[c] += 1
    return widths


class Table:
    """A Markdown table laid out for the width it is drawn at.

    Columns keep their natural widths when the table fits; otherwise they shrink and
    their cells wrap; and when even that does not fit, each row becomes a block of
    "header: value" lines."""

    def __init__(self, rows: list[list[Content]], header_rows: int, aligns: list[str]) -> None:
        self.columns = max((len(r) for r in rows), default=0)
        self.rows = [r + [Content("")] * (self.columns - len(r)) for r in rows]
        self.header_rows = header_rows
        self.aligns = aligns + [""] * (self.columns - len(aligns))
        self.natural = [max((_widest_line(r[c]) for r in self.rows), default=0) for c in range(self.columns)]
        self.floors = [
            min(natural, max(_MIN_COLUMN, min(_WORD_FLOOR, max(_longest_word(r[c]) for r in self.rows))))
            for c, natural in enumerate(self.natural)
        ]

    def lines(self, width: int) -> list[Content]:
        widths = _shared_out(self.natural, self.floors, width)
        if widths is None:
            return self._records(width)
        lines: list[Content] = []
        gap = Content.styled(_CELL_GAP, "$text-muted")
        for n, row in enumerate(self.rows):
            wrapped = [cell.wrap(w) if w else [Content("")] for cell, w in zip(row, widths, strict=True)]
            for i in range(max(len(cell) for cell in wrapped)):
                cells = [
                    _aligned(cell[i] if i < len(cell) else Content(""), w, self.aligns[c])
                    for c, (cell, w) in enumerate(zip(wrapped, widths, strict=True))
                ]
                line = gap.join(cells)
                lines.append(line.stylize("bold") if n < self.header_rows else line)
            if n == self.header_rows - 1:
                lines.append(Content.styled("─┼─".join("─" * w for w in widths), "$text-muted"))
        return lines

    def _records(self, width: int) -> list[Content]:
        """One block per row, a "header: value" line per column, the value wrapped under itself."""
        header = self.rows[0] if self.header_rows else [Content("") for _ in range(self.columns)]
        keys = [Content.assemble(cell.stylize("bold") if cell.cell_length else Content(str(c + 1)), ":")
                for c, cell in enumerate(header)]
        # Values line up after the longest key when that leaves them half the width.
        common = max(key.cell_length for key in keys) + 1
        lines: list[Content] = []
        for row in self.rows[self.header_rows :]:
            if lines:
                lines.append(Content(""))
            for key, value in zip(keys, row, strict=True):
                indent = common if width - common >= width // 2 else key.cell_length + 1
                if width - indent < max(_MIN_COLUMN, width // 2):
                    # A long header: the value goes on the lines below it.
                    lines.append(key)
                    if value.cell_length:
                        lines += [Content("  ") + part for part in value.wrap(max(width - 2, 1))]
                    continue
                parts = value.wrap(width - indent)
                lines.append(key.pad_right(indent - key.cell_length) + parts[0])
                lines += [Content(" " * indent) + part for part in parts[1:]]
        return lines


def _table(tokens: list[Token], start: int) -> tuple[Table, int]:
    rows: list[list[Content]] = []
    aligns: list[str] = []
    header_rows = 0
    in_head = False
    i = start
    while i < len(tokens) and tokens[i].type != "table_close":
        kind = tokens[i].type
        if kind == "th_open" and len(rows) == 1:
            aligns.append(str(tokens[i].attrGet("style") or "").removeprefix("text-align:"))
        elif kind == "thead_open":
            in_head = True
        elif kind == "thead_close":
            in_head = False
        elif kind == "tr_open":
            rows.append([])
            header_rows += in_head
        elif kind == "inline":
            rows[-1].append(_inline(tokens[i]))
        i += 1
    return Table(rows, header_rows, aligns), i


@cache
def _parser() -> MarkdownIt:
    # Loaded with the first answer, not before the first paint.
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like")


@lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer:
    # Looked up once per language: an unknown name makes Pygments scan its plugins.
    from pygments.lexers import find_lexer_class_by_name
    from pygments.util import ClassNotFound

    try:
        found = find_lexer_class_by_name(language)
    except ClassNotFound:
        found = find_lexer_class_by_name("text")
    return _quicker_to_build(found)(stripnl=False, ensurenl=True, tabsize=8)


# What a Python identifier is to the lexer below: a letter or `_`, then letters, digits and `_`.
IDENTIFIER = r"[^\W\d]\w*"


def _quicker_to_build(lexer: type[Lexer]) -> type[Lexer]:
    """`lexer`, or a subclass of it whose rules name an identifier `IDENTIFIER`'s way.

    Pygments' Python lexer (and two others) spells an identifier with Unicode's XID classes,
    3.5 KB of ranges in six rules; compiling them is most of the 40-60 ms the lexer takes to build,
    and a resumed session's last screen waits for it.  `IDENTIFIER` matches the same names but for
    those holding combining marks (split there, so highlighted as two names)."""
    from pygments import unistring
    from pygments.lexer import RegexLexer

    if not issubclass(lexer, RegexLexer) or getattr(lexer, "token_variants", False):
        return lexer
    spelled = f"[{unistring.xid_start}][{unistring.xid_continue}]*"
    states = lexer.get_tokendefs()
    if not any(isinstance(rule, tuple) and isinstance(rule[0], str) and spelled in rule[0]
               for rules in states.values() for rule in rules):
        return lexer
    tokens = {
        state: [(rule[0].replace(spelled, IDENTIFIER), *rule[1:])
                if isinstance(rule, tuple) and isinstance(rule[0], str) else rule for rule in rules]
        for state, rules in states.items()
    }
    return type(lexer.__name__, (lexer,), {"tokens": tokens, "__module__": __name__})


def _highlight(code: str, language: str | None) -> Content:
    """`code` styled as `textual.highlight.highlight` styles it, with a cached lexer."""
    # Pygments loads on the first code block, not at start-up.
    from textual.highlight import HighlightTheme

    code = "\n".join(code.splitlines())
    styles = HighlightTheme.STYLES
    spans: list[Span] = []
    start = 0
    for token_type, token in _lexer((language or "text").lower()).get_tokens(code):
        end = start + len(token)
        kind = token_type
        while kind is not None:
            if style := styles.get(kind):
                spans.append(Span(start, end, style))
                break
            kind = kind.parent
        start = end
    return Content(code, spans=spans).stylize_before("$text")


class MarkdownVisual(Visual):
    """Markdown blocks laid out for the width they are drawn at.

    Each block has a prefix for its first line and one for every other line, the
    lines it wraps to included: a list item's marker and then its hanging indent,
    a quote's bar, a code block's gutter.  (A plain `Content` would wrap those
    lines back to column 0.)  A table fits its columns to the width (`Table`)."""

    def __init__(self, blocks: list[tuple[Content | Table, Content, Content, bool]]) -> None:
        self._blocks = blocks  # (body, first-line prefix, other-lines prefix, blank line before it)
        # Laid out per width (lines, how many): the last few widths, so a resize back costs nothing.
        self._layouts: dict[int, tuple[int, Content, int]] = {}

    def _lines(self, width: int) -> list[Content]:
        lines: list[Content] = []
        for n, (body, first, rest, gap) in enumerate(self._blocks):
            if n and gap:
                lines.append(Content(""))
            room = max(width - max(first.cell_length, rest.cell_length), 1)
            body_lines = body.lines(room) if isinstance(body, Table) else body.wrap(room)
            for row, line in enumerate(body_lines):
                lines.append((rest if row else first) + line)
        return lines

    def _laid_out(self, width: int) -> tuple[int, Content, int]:
        layout = self._layouts.get(width)
        if layout is None:
            lines = self._lines(width)
            layout = (width, Content("\n").join(lines), len(lines))
            if len(self._layouts) >= LAYOUTS_KEPT:
                del self._layouts[next(iter(self._layouts))]
            self._layouts[width] = layout
        return layout

    def layout(self, width: int) -> Content:
        """The blocks as lines of at most `width` cells (where a prefix leaves room)."""
        return self._laid_out(width)[1]

    @property
    def plain(self) -> str:
        """The text, wrapped only where the source has line breaks."""
        return Content("\n").join(self._lines(1 << 20)).plain

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        return self.layout(width).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return container_width

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self._laid_out(width)[2]


def render_markdown(source: str) -> MarkdownVisual:
    """The Markdown `source` as styled blocks (separated by blank lines)."""
    tokens = _parser().parse(source)
    blocks: list[tuple[Content | Table, Content, Content, bool]] = []
    list_opened = False
    # A stack of list markers: None for bullets, else the next number.
    lists: list[int | None] = []
    pending_prefix: list[Content] = []  # the marker of a list item, for its first line
    quote = 0
    i = 0

    def add(block: Content | Table, gutter: Content | None = None) -> None:
        nonlocal list_opened
        # Items of a list follow one another; everything else is a paragraph apart.
        gap = not lists or (list_opened and len(lists) == 1)
        list_opened = False
        outer = Content.styled("▌ " * quote, "$text-muted") if quote else Content("")
        if lists:
            outer += Content("  " * (len(lists) - 1))
        first = rest = outer + Content("  ") if lists else outer
        if pending_prefix:
            marker = pending_prefix.pop()
            first, rest = outer + marker, outer + Content(" " * marker.cell_length)
        if gutter is not None:
            first, rest = first + gutter, rest + gutter
        blocks.append((block, first, rest, gap))

    while i < len(tokens):
        token = tokens[i]
        kind = token.type
        if kind == "heading_open":
            add(_inline(tokens[i + 1]).stylize(_HEADING_STYLES.get(token.tag, "bold")))
            i += 2
        elif kind == "inline":
            add(_inline(token))
        elif kind in ("fence", "code_block"):
            language = token.info.split()[0] if token.info.strip() else None
            add(_highlight(token.content.rstrip("\n"), language), gutter=Content.styled("│ ", "$text-muted"))
        elif kind == "bullet_list_open":
            lists.append(None)
            list_opened = True
        elif kind == "ordered_list_open":
            lists.append(int(token.attrGet("start") or 1))
            list_opened = True
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            number = lists[-1] if lists else None
            if number is None:
                pending_prefix[:] = [Content.styled("• ", "$text-primary")]
            else:
                pending_prefix[:] = [Content.styled(f"{number}. ", "$text-primary")]
                lists[-1] = number + 1
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind == "hr":
            add(Content.styled("─" * 40, "$secondary"))
        elif kind == "table_open":
            table, i = _table(tokens, i)
            add(table)
        elif kind == "html_block":
            add(Content(token.content.rstrip("\n")))
        i += 1
    return MarkdownVisual(blocks)


class Selectable:
    """Mouse selection reads the text as laid out (Textual's own reading wants a `Content`)."""

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        visual = self._render()  # type: ignore[attr-defined]
        if not isinstance(visual, MarkdownVisual):
            return super().get_selection(selection)  # type: ignore[misc]
        text = visual.layout(self.content_region.width or 80).plain  # type: ignore[attr-defined]
        return selection.extract(text), "\n"


class FrozenMarkdown(Selectable, Static):
    """Finished Markdown.  Parsed when first drawn (an entry of a resumed session that is
    never scrolled to is never parsed), and made again from the same parse and its
    per-width layouts when the transcript mounts it again (`remake`)."""

    def __init__(self, source: str, *, classes: str | None = None, visual: MarkdownVisual | None = None) -> None:
        super().__init__("", classes=classes, markup=False)
        self.source = source
        self._markdown = visual

    @property
    def visual(self) -> MarkdownVisual:
        if self._markdown is None:
            self._markdown = render_markdown(self.source)
        return self._markdown

    def remake(self) -> Callable[[], FrozenMarkdown]:
        return partial(FrozenMarkdown, self.source, classes=" ".join(self.classes), visual=self._markdown)
