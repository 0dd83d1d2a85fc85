"""Characters that change how text reads without being drawn.

Bidi embeddings, overrides, isolates and marks (U+202A-202E, U+2066-2069, U+200E/F) and
zero-width characters (U+200B-200D, U+2060, U+FEFF): a terminal draws nothing for them, yet
they reorder or split what is drawn around them, so a command can read as another one.  The
policy never proposes a rule holding one; the TUI marks them wherever it shows a command.
"""

from __future__ import annotations

import re

HIDDEN = re.compile("[\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")


def has_hidden(text: str) -> bool:
    """Whether `text` holds a character that changes how it reads without being drawn."""
    return HIDDEN.search(text) is not None
