"""An image on the system clipboard, for Ctrl+V in the prompt (as Claude Code reads it).

Terminals paste text only, so an image copied from a screenshot tool or a browser never reaches
the app as a paste event.  Ctrl+V asks the platform's clipboard tool instead: `wl-paste` on
Wayland, `xclip` on X11, `pngpaste` or `osascript` on macOS, whichever is installed.  An image
found is saved as a PNG file under agent-tui's data folder and its path goes into the prompt,
where a pasted image path already attaches the image (tui/mentions.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..paths import data_dir

# What an image on the clipboard may be offered as, best first.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")
# A clipboard tool that does not answer in this time is given up on (a hung X server, a prompt).
TIMEOUT = 3.0
# Larger than the largest image Read would take (tools/media.py refuses it with a clear message).
MAX_BYTES = 64 * 1024 * 1024


async def _run(*argv: str) -> bytes | None:
    """The command's stdout when it exits 0 in time, else None."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return None
    return out[: MAX_BYTES + 1] if proc.returncode == 0 else None


def _offered(listing: bytes | None) -> str | None:
    types = (listing or b"").decode("utf-8", errors="replace").split()
    return next((t for t in IMAGE_TYPES if t in types), None)


async def _wayland() -> bytes | None:
    kind = _offered(await _run("wl-paste", "--list-types"))
    return await _run("wl-paste", "--no-newline", "--type", kind) if kind else None


async def _x11() -> bytes | None:
    kind = _offered(await _run("xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"))
    return await _run("xclip", "-selection", "clipboard", "-t", kind, "-o") if kind else None


async def _pngpaste() -> bytes | None:
    return await _run("pngpaste", "-")


async def _osascript() -> bytes | None:
    with tempfile.TemporaryDirectory(prefix="agent-tui-clip-") as folder:
        target = Path(folder) / "clip.png"
        script = (
            "set png_data to (the clipboard as «class PNGf»)\n"
            f'set fp to open for access POSIX file "{target}" with write permission\n'
            "write png_data to fp\nclose access fp"
        )
        if await _run("osascript", "-e", script) is None or not target.exists():
            return None
        return target.read_bytes()[: MAX_BYTES + 1]


def _readers() -> list[tuple[str, object]]:
    """The clipboard tools to try here, in order: only those installed."""
    candidates: list[tuple[str, object]] = []
    if sys.platform == "darwin":
        candidates += [("pngpaste", _pngpaste), ("osascript", _osascript)]
    if os.environ.get("WAYLAND_DISPLAY"):
        candidates.append(("wl-paste", _wayland))
    candidates += [("xclip", _x11), ("wl-paste", _wayland)]
    seen: set[str] = set()
    found = []
    for tool, reader in candidates:
        if tool not in seen and shutil.which(tool):
            seen.add(tool)
            found.append((tool, reader))
    return found


def clipboard_tools() -> list[str]:
    """The names of the clipboard tools Ctrl+V would ask (none: it pastes text as usual)."""
    return [tool for tool, _ in _readers()]


async def clipboard_image() -> bytes | None:
    """The image on the clipboard, as the tool gave it; None when there is none or no tool."""
    for _tool, reader in _readers():
        data = await reader()  # type: ignore[operator]
        if data:
            return data
    return None


def save_pasted_image(data: bytes, folder: Path | None = None) -> Path:
    """The image as a file named by its content (pasting it twice gives one file): PNG, JPEG, GIF
    and WebP as they came, another format (a BMP) converted to PNG; bytes that are no image are
    kept as `.png`, and attaching them says what is wrong."""
    import io

    from PIL import Image, UnidentifiedImageError

    folder = folder or data_dir() / "pasted-images"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".png"
    try:
        with Image.open(io.BytesIO(data)) as img:
            kept = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp"}.get(img.format or "")
            if kept is None:
                converted = io.BytesIO()
                img.save(converted, format="PNG")
                data = converted.getvalue()
            suffix = kept or ".png"
    except (UnidentifiedImageError, OSError, ValueError):
        pass
    path = folder / f"clipboard-{hashlib.sha256(data).hexdigest()[:12]}{suffix}"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path
