"""Project trees the benchmarks and the tmux tests make for themselves."""

from __future__ import annotations

from pathlib import Path

WORDS = ["core", "api", "util", "models", "views", "pricing", "billing", "orders", "users", "auth", "tests", "docs"]


def fifty_thousand_files(root: Path) -> None:
    """A 50,000-file repository: 144 folders of 347 empty modules (`pkg/<a>/<b>/mod_<a>_<b>_<n>.py`),
    one pricing rule file (`pkg/pricing/orders/discount_rules.py`), and a `.gitignore`d build
    folder holding a copy of it."""
    for a in WORDS:
        for b in WORDS:
            folder = root / "pkg" / a / b
            folder.mkdir(parents=True)
            for n in range(347):
                (folder / f"mod_{a}_{b}_{n}.py").touch()
    (root / "pkg" / "pricing" / "orders" / "discount_rules.py").touch()
    (root / "build").mkdir()
    (root / "build" / "discount_rules.py").touch()
    (root / ".gitignore").write_text("build/\n")
    (root / ".git").mkdir()
