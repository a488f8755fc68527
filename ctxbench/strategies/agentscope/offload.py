"""The files AgentScope's offloader writes from trace content, named and bounded (issue 38).

A trace is untrusted: ``data:image/html;base64,...`` once became ``image-<sha>.html``, which
the viewer linked and a browser ran. Names here never come from the trace:

- an offloaded image's extension is its media type's, from :data:`IMAGE_EXTENSIONS` (the
  subtype as AgentScope writes it for every image type browsers show inline as an image), and
  :data:`OTHER_EXTENSION` for any other type;
- a run writes at most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes of them; past
  either, the replay stops with one error naming the limit (an 8 MB trace once wrote 597 MB);
- a file whose path and content were written already is held once and counted once;
- the offloaded context is one file appended to at each compaction (:meth:`Offloader.append`),
  as AgentScope's offload file is, so disk and memory grow with the trace, not its square.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.context import ReplayContext, safe_path
from ctxbench.errors import OutputError

#: Image subtypes kept as the file's extension; any other is :data:`OTHER_EXTENSION`.
IMAGE_EXTENSIONS = frozenset({"png", "jpeg", "jpg", "gif", "webp", "bmp"})
OTHER_EXTENSION = "bin"
#: Per run: how many files, and how many bytes in all, the offloader may write.
MAX_FILES = 10_000
MAX_BYTES = 256 * 2**20

_DATA_URL = re.compile(r"data:image/([\w.+-]+);base64,(.*)", re.S)


def image_file(url: str) -> tuple[str, bytes] | None:
    """(extension, bytes) of an image ``data:`` URL; None when it is not one or not base64."""
    found = _DATA_URL.match(url)
    if not found:
        return None
    try:
        data = base64.b64decode(found.group(2), validate=False)
    except (binascii.Error, ValueError):
        return None
    subtype = found.group(1).lower()
    return (subtype if subtype in IMAGE_EXTENSIONS else OTHER_EXTENSION), data


class Offloader:
    """Writes one run's offloaded files through the replay context, within the bounds."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self._written: dict[str, str] = {}  # requested path -> sha256 of what it holds
        #: files appended to, by path: their running hash
        self._appended: dict[str, Any] = {}

    def write(self, ctx: ReplayContext, path: str, content: bytes) -> str:
        """Write ``content`` at ``path`` (the path the prompt cites is returned)."""
        digest = hashlib.sha256(content).hexdigest()
        if self._written.get(path) == digest:  # the same file again: held once, counted once
            return ctx.write_file(path, content, sha256=digest)
        self._count(path, len(content))
        self._written[path] = digest
        return ctx.write_file(path, content, sha256=digest)

    def append(self, ctx: ReplayContext, path: str, more: bytes) -> str:
        """Append ``more`` to the file at ``path`` (created by the first call): the file the
        prompt cites is one file that grows, as AgentScope's offload file does, not a new copy
        of everything offloaded so far at each compaction (an 8 MB trace wrote 377 MB so,
        measured). Its snapshot event says its size and hash after this append."""
        name = safe_path(path)
        held = self._appended.get(name)
        if held is None:
            if name in ctx.written or name in ctx.files:  # written otherwise: never appended to
                return self.write(ctx, path, more)
            self._count(path, len(more))
            held = self._appended[name] = hashlib.sha256()
        else:
            self.bytes += len(more)
            self._check(path)
        held.update(more)
        content = ctx.files.get(name, b"") + more  # the previous content is freed
        ctx.files[name] = content
        ctx.emit(ev.Snapshot(path=name, bytes=len(content), sha256=held.hexdigest()))
        return name

    def _count(self, path: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        self._check(path)

    def _check(self, path: str) -> None:
        if self.files <= MAX_FILES and self.bytes <= MAX_BYTES:
            return
        raise OutputError(
            f"AgentScope's offloader would write more than {MAX_FILES:,} files or "
            f"{MAX_BYTES:,} bytes in one run (the limits, "
            "ctxbench.strategies.agentscope.offload.MAX_FILES and MAX_BYTES)",
            path=path,
            hint="replay a shorter trace, or raise the tool-result limit and compaction "
            "threshold so fewer messages are offloaded",
        )
