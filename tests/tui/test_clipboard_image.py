"""Ctrl+V attaches an image on the system clipboard, read with the platform's clipboard tool
(tui/clipboard.py): here a fake `xclip` on PATH that holds a PNG, as a real one would answer."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from agent_tui.tui.clipboard import save_pasted_image
from tests.engine_helpers import uncached
from tests.loopback import reply

from .helpers import finished, make_app, settle, wait_until


def png_bytes(size=(32, 24), colour=(10, 200, 90), format="PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=format)
    return buffer.getvalue()


def fake_xclip(folder: Path, targets: str, image: Path | None) -> None:
    """An `xclip` that answers `-t TARGETS -o` with `targets` and `-t image/png -o` with the image."""
    folder.mkdir(exist_ok=True)
    script = folder / "xclip"
    image_line = f'cat "{image}"' if image else "exit 1"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  *"-t TARGETS -o"*) printf "{targets}\\n" ;;\n'
        f'  *"-t image/png -o"*) {image_line} ;;\n'
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    script.chmod(0o755)


@pytest.fixture
def clipboard(tmp_path, monkeypatch):
    """A PATH whose only clipboard tool is the fake xclip; returns where its image goes."""
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return folder


async def test_ctrl_v_attaches_the_clipboard_image_to_the_prompt(api, tmp_path, clipboard):
    image = tmp_path / "copied.png"
    image.write_bytes(png_bytes())
    fake_xclip(clipboard, "TARGETS\\ntext/plain\\nimage/png", image)
    project = tmp_path / "project"
    project.mkdir()
    api.push(reply("A green rectangle."))
    app, recorded = make_app(api, project)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("w", "h", "a", "t", "space", "i", "s", "space", "t", "h", "i", "s", "?")
        await pilot.press("ctrl+v")
        await wait_until(pilot, lambda: "clipboard-" in app.prompt_input.text)
        assert app.prompt_input.text.startswith("what is this? ")
        await pilot.press("enter")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
    content = uncached(api.requests[0].body["messages"][-1])["content"]
    assert [b["type"] for b in content] == ["text", "image", "text"]  # the attachment, then the prompt
    assert content[1]["source"]["media_type"] == "image/png"
    assert base64.b64decode(content[1]["source"]["data"]) == image.read_bytes()
    assert content[2]["text"].startswith("what is this? ") and "clipboard-" in content[2]["text"]


async def test_ctrl_v_without_an_image_on_the_clipboard_pastes_text_as_usual(api, tmp_path, clipboard):
    fake_xclip(clipboard, "TARGETS\\ntext/plain", None)
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        app.copy_to_clipboard("copied words")  # the app's own clipboard, what TextArea pastes
        await pilot.press("ctrl+v")
        await wait_until(pilot, lambda: app.prompt_input.text == "copied words")


def test_a_pasted_bmp_is_saved_as_png_and_the_same_image_once(tmp_path):
    bmp = png_bytes(format="BMP")
    first = save_pasted_image(bmp, tmp_path)
    second = save_pasted_image(bmp, tmp_path)
    assert first == second and first.suffix == ".png" and list(tmp_path.iterdir()) == [first]
    with Image.open(first) as img:
        assert img.format == "PNG" and img.size == (32, 24)
