"""Images and PDFs as the Messages API takes them: `image` and `document` blocks.

Every way an image reaches the model (Read, an `@` attachment, a pasted path, an MCP
result) goes through `image_block`: an image within the API's limits is sent as it
is, a larger one is downscaled with Pillow, and one that cannot be made to fit (too
large to decode, corrupt, a format Pillow cannot read) raises `ImageError`.  The
caller then puts `unsendable_note` where the image would have gone: a text block
the engine recognises before the next request and ends the query with
`image_error` (engine/images.py), so the person learns why and the history stays
valid.

The image's header is read first and its pixel count checked before anything is
decoded; JPEGs are decoded straight at the reduced size (`draft`).
"""

from __future__ import annotations

import base64
import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The API's limits: 5 MB of base64 per image, 8000 px a side (2000 px is what Claude Code
# sends, and all the model can see in a request with many images).
API_IMAGE_MAX_BASE64 = 5 * 1024 * 1024
MAX_SIDE = 2000
# Raw bytes whose base64 stays under the API's limit.
TARGET_RAW_BYTES = API_IMAGE_MAX_BASE64 * 3 // 4
# Past these an image is not even decoded: memory, not the API, is the limit here.
MAX_SOURCE_BYTES = 50 * 1024 * 1024
MAX_DECODE_PIXELS = 100_000_000

API_MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})

# The API's request limit is 32 MB; this leaves room for the rest of the conversation.
MAX_PDF_BYTES = 20 * 1024 * 1024
# A PDF longer than this is read a page range at a time (Claude Code's `pages`), at most
# MAX_PDF_PAGES pages per Read.
PDF_WHOLE_PAGES = 10
MAX_PDF_PAGES = 20
# A PDF is parsed whole to cut pages from it: past this size it is not opened.
MAX_PDF_SOURCE_BYTES = 100 * 1024 * 1024

# The key that marks a text block standing for an image that could not be sent.
IMAGE_ERROR_KEY = "_image_error"


class ImageError(Exception):
    """An image the API cannot take, even resized; the message says why, for a person."""


class PdfError(Exception):
    """A PDF that cannot be sent as asked; the message is the tool result text."""


@dataclass(frozen=True, slots=True)
class EncodedImage:
    """An image ready for the API, and what a person is told about it."""

    block: dict[str, Any]
    media_type: str
    width: int
    height: int
    size: int  # bytes sent, before base64
    original: tuple[int, int]
    source_size: int

    @property
    def resized(self) -> bool:
        return (self.width, self.height) != self.original or self.size != self.source_size

    def describe(self) -> str:
        """One line for transcripts: "image PNG 1024×768 · 234 KB" (and what it was, if resized)."""
        kind = self.media_type.split("/", 1)[1].upper()
        line = f"image {kind} {self.width}×{self.height} · {human_size(self.size)}"
        if self.resized:
            w, h = self.original
            line += f" (resized from {w}×{h}, {human_size(self.source_size)})"
        return line


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def is_image_path(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def is_pdf_path(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix.lower() == ".pdf"


def unsendable_note(text: str) -> dict[str, Any]:
    """The text block that takes the place of an image that could not be sent."""
    return {"type": "text", "text": text, IMAGE_ERROR_KEY: True}


def image_file_block(path: Path) -> EncodedImage:
    """`path` as an image block; ImageError when it cannot be sent."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImageError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
    _check_source_size(size, path.name)
    from ._fileio import open_regular

    with open_regular(path) as f:
        data = f.read(MAX_SOURCE_BYTES + 1)
    return image_block(data, path.name)


def image_base64_block(data: str, label: str) -> EncodedImage:
    """Base64 image data (an MCP result's) as an image block, its size checked before decoding."""
    _check_source_size(len(data) * 3 // 4, label)
    try:
        raw = base64.b64decode(data, validate=False)
    except ValueError as exc:
        raise ImageError(f"{label} is not valid base64 image data") from exc
    return image_block(raw, label)


def image_block(data: bytes, label: str) -> EncodedImage:
    """Encoded image bytes as an API image block: as they are when they fit, else downscaled."""
    _check_source_size(len(data), label)
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # The pixel count is checked below, against our own limit; Pillow's error stays for the huge.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise ImageError(_too_many_pixels(label)) from exc
    except UnidentifiedImageError as exc:
        raise ImageError(
            f"{label} is not an image the model can take (PNG, JPEG, GIF or WebP), or it is corrupt"
        ) from exc
    except OSError as exc:
        raise ImageError(f"{label} could not be read as an image: {exc}") from exc
    with img:
        width, height = img.size
        if width * height > MAX_DECODE_PIXELS:
            raise ImageError(_too_many_pixels(label, f" ({width}×{height})"))
        media_type = API_MEDIA_TYPES.get(img.format or "")
        if media_type is not None and max(width, height) <= MAX_SIDE and len(data) <= TARGET_RAW_BYTES:
            _verify(img, label)
            return _encoded(data, media_type, (width, height), (width, height), len(data))
        return _downscaled(img, label, len(data))


def _too_many_pixels(label: str, dimensions: str = "") -> str:
    return (
        f"{label}{dimensions} has more than the {MAX_DECODE_PIXELS // 1_000_000} million pixels "
        "that are resized for the model"
    )


def _check_source_size(size: int, label: str) -> None:
    if size > MAX_SOURCE_BYTES:
        raise ImageError(
            f"{label} is {human_size(size)}; images over {human_size(MAX_SOURCE_BYTES)} are not resized "
            f"for the model (the API takes {human_size(API_IMAGE_MAX_BASE64)} per image)"
        )


def _verify(img: Any, label: str) -> None:
    """Decode the image once: a truncated or corrupt file fails here, not at the API."""
    try:
        img.load()
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageError(f"{label} is corrupt: {exc}") from exc


def _downscaled(img: Any, label: str, source_size: int) -> EncodedImage:
    from PIL import Image

    original = img.size
    if img.format == "JPEG":
        img.draft("RGB", (MAX_SIDE, MAX_SIDE))  # decode at a fraction of the size: cheap and small
    _verify(img, label)
    frame = img.convert("RGBA" if _has_alpha(img) else "RGB")
    frame.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    # PNG keeps text and transparency sharp; JPEG at falling quality when PNG is too large.
    for _ in range(4):
        for fmt, options in _encodings(frame):
            out = io.BytesIO()
            frame.convert("RGB" if fmt == "JPEG" else frame.mode).save(out, fmt, **options)
            if out.tell() <= TARGET_RAW_BYTES:
                return _encoded(out.getvalue(), API_MEDIA_TYPES[fmt], frame.size, original, source_size)
        frame = frame.resize((max(1, frame.width * 3 // 4), max(1, frame.height * 3 // 4)), Image.Resampling.LANCZOS)
    raise ImageError(f"{label} is still over {human_size(API_IMAGE_MAX_BASE64)} after resizing")


def _encodings(frame: Any) -> list[tuple[str, dict[str, Any]]]:
    jpeg = [("JPEG", {"quality": q, "optimize": True}) for q in (85, 70, 55)]
    return [("PNG", {"optimize": True}), *([] if frame.mode == "RGBA" else jpeg)]


def _has_alpha(img: Any) -> bool:
    return img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)


def _encoded(
    data: bytes, media_type: str, size: tuple[int, int], original: tuple[int, int], source_size: int
) -> EncodedImage:
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode("ascii")},
    }
    return EncodedImage(block, media_type, size[0], size[1], len(data), original, source_size)


# ---------------------------------------------------------------- PDF


@dataclass(frozen=True, slots=True)
class EncodedPdf:
    block: dict[str, Any]
    pages: int  # pages sent
    total_pages: int
    size: int

    def describe(self) -> str:
        part = f"{self.pages} of {self.total_pages} pages" if self.pages != self.total_pages else f"{self.pages} pages"
        return f"PDF {part} · {human_size(self.size)}"


def parse_pages(spec: str) -> tuple[int, int]:
    """Claude Code's `pages` value ("3", "1-5") as a 1-based inclusive range; ValueError when malformed."""
    first, sep, last = spec.strip().partition("-")
    start = int(first)
    end = int(last) if sep else start
    if start < 1 or end < start:
        raise ValueError(spec)
    return start, end


def pdf_document_block(path: Path, pages: str | None = None) -> EncodedPdf:
    """`path` as a document block: whole when short, else the `pages` asked for; PdfError otherwise."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.errors import PdfReadError

    size = path.stat().st_size
    if size > MAX_PDF_SOURCE_BYTES:
        raise PdfError(f"{path} is {human_size(size)}; PDFs over {human_size(MAX_PDF_SOURCE_BYTES)} are not read.")
    from ._fileio import open_regular

    with open_regular(path) as f:
        data = f.read()
    try:
        reader = PdfReader(io.BytesIO(data))
        total = len(reader.pages)
    except (PdfReadError, ValueError, OSError) as exc:
        raise PdfError(f"{path} is not a readable PDF: {exc}") from exc
    if pages is None:
        if total > PDF_WHOLE_PAGES:
            raise PdfError(
                f"{path} has {total} pages, more than the {PDF_WHOLE_PAGES} read at once. "
                f'Read it a page range at a time with the pages parameter (e.g. pages: "1-5"), '
                f"at most {MAX_PDF_PAGES} pages per call."
            )
        if size > MAX_PDF_BYTES:
            raise PdfError(
                f"{path} is {human_size(size)}, over the {human_size(MAX_PDF_BYTES)} a PDF may be; "
                'read it a page range at a time with the pages parameter (e.g. pages: "1-3").'
            )
        return EncodedPdf(_document(data), total, total, size)
    start, end = parse_pages(pages)
    if start > total:
        raise PdfError(f"{path} has {total} pages; page {start} does not exist.")
    end = min(end, total)
    if end - start + 1 > MAX_PDF_PAGES:
        raise PdfError(f"At most {MAX_PDF_PAGES} pages are read per call; asked for {end - start + 1}.")
    writer = PdfWriter()
    try:
        for index in range(start - 1, end):
            writer.add_page(reader.pages[index])
        out = io.BytesIO()
        writer.write(out)
    except (PdfReadError, ValueError, OSError, KeyError) as exc:
        raise PdfError(f"Pages {start}-{end} of {path} could not be extracted: {exc}") from exc
    part = out.getvalue()
    if len(part) > MAX_PDF_BYTES:
        raise PdfError(f"Pages {start}-{end} of {path} are {human_size(len(part))}; read fewer pages at a time.")
    return EncodedPdf(_document(part), end - start + 1, total, len(part))


def _document(data: bytes) -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(data).decode("ascii")},
    }
