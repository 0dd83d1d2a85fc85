"""Images and PDFs reach the model: Read of an image or a PDF, an `@` attachment and a pasted
path, as the request that follows carries them (the real SDK against the loopback server);
an image the API cannot take ends the query with `image_error` and a valid history."""

from __future__ import annotations

import base64
import io

from PIL import Image
from pypdf import PdfReader, PdfWriter

from agent_tui.engine import events as ev
from agent_tui.engine.images import check_images
from agent_tui.engine.messages import check_history, tool_result_block, user_message
from agent_tui.tui.mentions import Prompt, mentioned_files, prompt_content
from tests.engine_helpers import Recorder, make_session, tool_results, uncached
from tests.loopback import reply, text, tool_use


def write_png(path, size=(64, 48), colour=(200, 30, 30)):
    Image.new("RGB", size, colour).save(path)
    return path


def write_pdf(path, pages):
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=300)
    with open(path, "wb") as f:
        writer.write(f)
    return path


def decoded(block):
    return base64.b64decode(block["source"]["data"])


async def read_once(api, tmp_path, input):
    """The model reads `input` once, then answers: the session, its events and the Read's result."""
    api.push(reply(tool_use("Read", input, id="r1")), reply(text("Seen.")))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)
    try:
        terminal = await session.submit("look at it")
    finally:
        await session.aclose()
    return session, recorder, terminal


async def test_read_of_a_png_sends_an_image_block(api, tmp_path):
    write_png(tmp_path / "shot.png")
    session, _, terminal = await read_once(api, tmp_path, {"file_path": str(tmp_path / "shot.png")})
    assert terminal.reason.value == "completed"
    [result] = tool_results(api.requests[1].body)
    [image] = result["content"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert decoded(image) == (tmp_path / "shot.png").read_bytes()  # within the limits: sent as it is
    assert check_history(session.history) == []


async def test_read_of_a_large_image_sends_it_downscaled(api, tmp_path):
    write_png(tmp_path / "wide.png", size=(3000, 1500))
    _, recorder, _ = await read_once(api, tmp_path, {"file_path": str(tmp_path / "wide.png")})
    [image] = tool_results(api.requests[1].body)[0]["content"]
    assert Image.open(io.BytesIO(decoded(image))).size == (2000, 1000)
    [finished] = recorder.of(ev.ToolFinished)
    assert finished.data["media"].startswith("image PNG 2000×1000")
    assert "resized from 3000×1500" in finished.data["media"]


async def test_media_type_follows_the_content_not_the_name(api, tmp_path):
    Image.new("RGB", (20, 20)).save(tmp_path / "photo.png", "JPEG")
    await read_once(api, tmp_path, {"file_path": str(tmp_path / "photo.png")})
    [image] = tool_results(api.requests[1].body)[0]["content"]
    assert image["source"]["media_type"] == "image/jpeg"


async def test_read_of_a_pdf_sends_a_document_block(api, tmp_path):
    write_pdf(tmp_path / "paper.pdf", 3)
    await read_once(api, tmp_path, {"file_path": str(tmp_path / "paper.pdf")})
    [document] = tool_results(api.requests[1].body)[0]["content"]
    assert document["type"] == "document" and document["source"]["media_type"] == "application/pdf"
    assert decoded(document) == (tmp_path / "paper.pdf").read_bytes()


async def test_a_long_pdf_is_read_a_page_range_at_a_time(api, tmp_path):
    write_pdf(tmp_path / "book.pdf", 30)
    await read_once(api, tmp_path, {"file_path": str(tmp_path / "book.pdf")})
    [refused] = tool_results(api.requests[1].body)
    assert refused["is_error"] and "30 pages" in refused["content"] and "pages" in refused["content"]

    api.requests.clear()
    await read_once(api, tmp_path, {"file_path": str(tmp_path / "book.pdf"), "pages": "4-6"})
    [document] = tool_results(api.requests[1].body)[0]["content"]
    assert len(PdfReader(io.BytesIO(decoded(document))).pages) == 3


async def test_an_at_mentioned_image_is_attached(api, tmp_path):
    write_png(tmp_path / "diagram.png")
    api.push(reply(text("A red square.")))
    session = make_session(api.url, tmp_path)
    prompt = Prompt("what is @diagram.png", mentioned_files("what is @diagram.png", tmp_path))
    size = (tmp_path / "diagram.png").stat().st_size
    assert prompt.attachment_labels == [f"@diagram.png attached · image {size} B"]
    try:
        await session.submit(await prompt_content(prompt, session))
    finally:
        await session.aclose()
    content = uncached(api.requests[0].body["messages"][-1])["content"]
    [image] = [b for b in content if b["type"] == "image"]
    assert decoded(image) == (tmp_path / "diagram.png").read_bytes()
    assert content[-1] == {"type": "text", "text": "what is @diagram.png"}


async def test_a_pasted_image_path_is_attached(api, tmp_path):
    folder = tmp_path / "my shots"
    folder.mkdir()
    write_png(folder / "screen shot.png")
    escaped = str(folder / "screen shot.png").replace(" ", "\\ ")
    typed = f"{escaped} why is the button grey?"
    assert mentioned_files(typed, tmp_path) == [folder / "screen shot.png"]
    quoted = f"'{folder}/screen shot.png' what's this"  # an apostrophe later: still found
    assert mentioned_files(quoted, tmp_path) == [folder / "screen shot.png"]
    assert mentioned_files("is shot.png in the repo?", tmp_path) == []  # only existing files
    api.push(reply(text("It is disabled.")))
    session = make_session(api.url, tmp_path)
    try:
        await session.submit(await prompt_content(Prompt(typed, mentioned_files(typed, tmp_path)), session))
    finally:
        await session.aclose()
    content = uncached(api.requests[0].body["messages"][-1])["content"]
    assert [b["type"] for b in content] == ["text", "image", "text"]


async def test_a_60_mb_image_ends_the_query_with_image_error(api, tmp_path):
    big = tmp_path / "huge.png"
    Image.new("RGB", (4600, 4400), (10, 200, 10)).save(big, compress_level=0)
    assert big.stat().st_size > 60_000_000
    api.push(reply(tool_use("Read", {"file_path": str(big)}, id="r1")), reply(text("Understood.")))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)
    try:
        terminal = await session.submit("look at it")
        assert terminal.reason.value == "image_error"
        assert len(api.requests) == 1  # nothing was sent after the Read
        assert "huge.png" in terminal.error and "MB" in terminal.error
        [finished] = recorder.of(ev.QueryFinished)
        assert finished.terminal_reason == "image_error" and finished.is_error
        assert any(n.kind == "error" and "huge.png" in n.message for n in recorder.of(ev.Notice))
        assert check_history(session.history) == []
        # The conversation goes on: the note stands where the image was, sent as plain text.
        again = await session.submit("never mind")
    finally:
        await session.aclose()
    assert again.reason.value == "completed"
    [result] = [r for m in api.requests[1].body["messages"] for r in tool_results({"messages": [m]})]
    assert result["content"][0]["type"] == "text" and "huge.png" in result["content"][0]["text"]
    assert set(result["content"][0]) == {"type", "text"}


async def test_a_corrupt_image_ends_the_query_with_image_error(api, tmp_path):
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    _, _, terminal = await read_once(api, tmp_path, {"file_path": str(tmp_path / "broken.png")})
    assert terminal.reason.value == "image_error"
    assert "broken.png" in terminal.error


async def test_an_attached_image_too_large_is_image_error_before_any_request(api, tmp_path):
    big = tmp_path / "poster.png"
    Image.new("RGB", (4600, 4400)).save(big, compress_level=0)
    session = make_session(api.url, tmp_path)
    try:
        content = await prompt_content(Prompt("print @poster.png", [big]), session)
        terminal = await session.submit(content)
    finally:
        await session.aclose()
    assert terminal.reason.value == "image_error" and api.requests == []
    assert "poster.png" in terminal.error
    assert check_history(session.history) == []


def test_an_image_over_the_api_limit_from_elsewhere_is_replaced_by_a_note():
    oversized = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 6_000_000}}
    history = [
        user_message("start"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__x__shot", "input": {}}]},
        user_message([tool_result_block("t1", [oversized])]),
    ]
    checked = check_images(history)
    assert checked.problems and "5.0 MB" in checked.problems[0]
    [note] = checked.messages[2]["content"][0]["content"]
    assert note["type"] == "text" and "not sent" in note["text"]
    assert check_history(checked.messages) == []
    assert history[2]["content"][0]["content"] == [oversized]  # the input is not changed
