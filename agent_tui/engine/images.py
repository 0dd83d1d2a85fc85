"""Images and documents the Messages API would reject, found before a request is sent.

The seeds' `image_error`: rather than a 400 from the API, the query ends with a
clear message.  What is found is replaced in the history by a plain text note (a
tool_result keeps its place, so the history stays valid and the next prompt can
go on); tools/media.py leaves such a note marked where it could not make an image
fit, and this check also catches blocks that arrived whole from elsewhere (a
resumed transcript, an SDK client's message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..tools.media import API_IMAGE_MAX_BASE64, API_MEDIA_TYPES, IMAGE_ERROR_KEY, human_size
from .messages import ATTACHMENT_RESULT, Block, Message, blocks, text_block

if TYPE_CHECKING:
    from .memo import HistoryMemo

# The API's request limit is 32 MB: one document's base64 may not take all of it.
API_DOCUMENT_MAX_BASE64 = 30 * 1024 * 1024
_DOCUMENT_MEDIA_TYPES = frozenset({"application/pdf", "text/plain"})


@dataclass
class ImageCheck:
    """The history with every unsendable image replaced by a note, and what was wrong."""

    messages: list[Message]
    problems: list[str] = field(default_factory=list)


def check_images(messages: list[Message], memo: HistoryMemo | None = None) -> ImageCheck:
    """Find images and documents the API cannot take; `messages` is not changed.  With a
    `memo` (engine/memo.py), a message found sendable is not looked at again."""
    if memo is not None and all(memo.media_ok.map(messages, _sendable)):
        return ImageCheck(list(messages))
    problems: list[str] = []
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not _may_hold_media(content):
            out.append(message)
            continue
        new_content = [_checked(b, problems) for b in blocks(message)]
        out.append({**message, "content": new_content} if new_content != content else message)
    return ImageCheck(out if problems else list(messages), problems)


def _sendable(message: Message) -> bool:
    content = message.get("content")
    if not isinstance(content, list) or not _may_hold_media(content):
        return True
    problems: list[str] = []
    for block in blocks(message):
        _checked(block, problems)
    return not problems


def image_error_message(problems: list[str]) -> str:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return (
        f"{first}{more}. It was left out of the conversation: resize the image or send a smaller one, "
        "then ask again."
    )


def _may_hold_media(content: list[Any]) -> bool:
    return any(isinstance(b, dict) and b.get("type") in ("image", "document", "tool_result", "text") for b in content)


def _checked(block: Block, problems: list[str]) -> Block:
    kind = block.get("type")
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = [_checked(b, problems) if isinstance(b, dict) else b for b in block["content"]]
        return {**block, "content": inner} if inner != block["content"] else block
    if kind == "text" and block.get(IMAGE_ERROR_KEY):
        problems.append(_sentence(block.get("text", "")))
        return text_block(block.get("text", ""))
    if kind in ("image", "document"):
        problem = _media_problem(block)
        if problem is not None:
            problems.append(problem)
            return text_block(f"[{problem}; it was not sent]")
    return block


def _sentence(text: str) -> str:
    return text.removeprefix(ATTACHMENT_RESULT).rstrip(". ")


def _media_problem(block: Block) -> str | None:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return None  # a URL or file reference: the API fetches and checks it
    data = source.get("data")
    media_type = source.get("media_type", "")
    if block["type"] == "image":
        if media_type not in API_MEDIA_TYPES.values():
            return f"An image of type {media_type or 'unknown'} cannot be sent (the API takes PNG, JPEG, GIF and WebP)"
        if not isinstance(data, str) or not data:
            return "An image without data cannot be sent"
        if len(data) > API_IMAGE_MAX_BASE64:
            return (
                f"An image of {human_size(len(data))} (base64) is over the API's "
                f"{human_size(API_IMAGE_MAX_BASE64)} limit per image"
            )
        return None
    if media_type not in _DOCUMENT_MEDIA_TYPES:
        return f"A document of type {media_type or 'unknown'} cannot be sent (the API takes PDF)"
    if isinstance(data, str) and len(data) > API_DOCUMENT_MAX_BASE64:
        return f"A document of {human_size(len(data))} (base64) is over the API's request size limit"
    return None
