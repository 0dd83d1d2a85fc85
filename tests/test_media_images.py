"""Images made fit for the API (tools/media.py): what is sent as it is, what is downscaled and
how, and what is refused before it is decoded."""

from __future__ import annotations

import base64
import io
import struct
import time
import zlib

import pytest
from PIL import Image

from agent_tui.tools import media


def encoded(img: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    img.save(out, fmt, **options)
    return out.getvalue()


def sent(image: media.EncodedImage) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(image.block["source"]["data"])))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims `width`×`height` and whose pixels are not there."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


def test_a_header_claiming_a_huge_image_is_refused_before_decoding():
    began = time.monotonic()
    with pytest.raises(media.ImageError, match="poster.png has more than the 100 million pixels"):
        media.image_block(png_header_only(30_000, 30_000), "poster.png")  # past Pillow's own bomb check
    with pytest.raises(media.ImageError, match=r"wide.png \(12000×10000\) has more than the 100 million pixels"):
        media.image_block(png_header_only(12_000, 10_000), "wide.png")  # under it: our check, from the header
    assert time.monotonic() - began < 1.0  # none of those pixels was decoded


def test_a_large_jpeg_is_decoded_at_a_reduced_size_and_fits():
    photo = Image.effect_noise((4000, 3000), 60).convert("RGB")
    image = media.image_block(encoded(photo, "JPEG", quality=95), "photo.jpg")
    assert (image.width, image.height) == (2000, 1500) and image.media_type == "image/jpeg"
    assert len(image.block["source"]["data"]) <= media.API_IMAGE_MAX_BASE64


def test_transparency_survives_downscaling_as_png():
    logo = Image.new("RGBA", (2400, 1200), (0, 0, 0, 0))
    image = media.image_block(encoded(logo, "PNG"), "logo.png")
    assert image.media_type == "image/png" and sent(image).mode == "RGBA" and sent(image).size == (2000, 1000)


def test_small_gif_and_webp_are_sent_as_they_are():
    for fmt, mime in (("GIF", "image/gif"), ("WEBP", "image/webp")):
        data = encoded(Image.new("RGB", (40, 30), (0, 90, 200)), fmt)
        image = media.image_block(data, f"small.{fmt.lower()}")
        assert image.media_type == mime and base64.b64decode(image.block["source"]["data"]) == data
        assert not image.resized


def test_a_format_the_api_does_not_take_is_converted():
    image = media.image_block(encoded(Image.new("RGB", (30, 20)), "BMP"), "old.bmp")
    assert image.media_type == "image/png" and sent(image).size == (30, 20)


def test_a_cmyk_jpeg_is_sent_as_rgb():
    data = encoded(Image.new("CMYK", (2500, 100), (0, 50, 50, 0)), "JPEG")
    image = media.image_block(data, "print.jpg")
    assert sent(image).mode == "RGB" and image.width == 2000


def test_a_truncated_image_is_corrupt():
    data = encoded(Image.effect_noise((300, 300), 40).convert("RGB"), "PNG")
    with pytest.raises(media.ImageError, match="truncated.png"):
        media.image_block(data[: len(data) // 2], "truncated.png")


def test_base64_over_the_source_cap_is_refused_without_decoding():
    too_big = "A" * (media.MAX_SOURCE_BYTES * 4 // 3 + 8)
    with pytest.raises(media.ImageError, match="are not resized"):
        media.image_base64_block(too_big, "The image from mcp__x__shot")


def test_the_description_names_the_resize():
    image = media.image_block(encoded(Image.new("RGB", (3000, 300)), "PNG"), "banner.png")
    assert image.describe().startswith("image PNG 2000×200 · ") and "resized from 3000×300" in image.describe()
