"""The replay context is the plug-in API and nothing more: every public name it has is one the
plug-in guide documents, and the engine's bookkeeping (``engine/recorder.py``) is not on it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.engine.context import ReplayContext, json_file
from ctxbench.engine.recorder import recorder_of
from ctxbench.trace import Message
from tests.factories import replay_context

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def public_names(ctx: ReplayContext) -> set[str]:
    return {n for n in (*vars(ctx), *dir(type(ctx))) if not n.startswith("_")}


def test_every_public_name_of_the_context_is_in_the_plugin_guide() -> None:
    documented = set(re.findall(r"`ctx\.(\w+)", GUIDE.read_text("utf-8")))
    undocumented = public_names(replay_context()) - documented
    assert not undocumented, (
        f"document these in docs/plugins.md, or make them private: {undocumented}"
    )


def test_the_engines_bookkeeping_is_the_recorders_not_the_contexts() -> None:
    ctx = replay_context()
    for name in ("append_recorded", "trace_index", "remember_system", "system_kept"):
        assert not hasattr(ctx, name), name
    message = Message("user", "task")
    recorder_of(ctx).append_recorded(message, 3)
    assert ctx.view.messages == (message,) and ctx.history == (message,)
    assert recorder_of(ctx).trace_index(message) == 3


def test_what_the_context_records_is_read_through_it() -> None:
    ctx = replay_context()
    path = ctx.write_json("snap/a b.json", {"k": 1})
    assert path.startswith("snap/a_b.json_")  # a changed name gets a hash of the original
    assert ctx.files[path] == b'{\n  "k": 1\n}'
    assert [e.type for e in ctx.events] == ["snapshot"]
    assert ctx.events[0]["path"] == path


def test_a_file_named_by_size_and_hash_is_recorded_as_its_content_would_be() -> None:
    """A replay keeping no content past ``contents_until``: ``name_file`` gives the path and
    snapshot event ``write_file`` gives, another content at a path taken goes to ``~2``, and
    only ``written`` holds them."""
    content, other = b'{"a": 1}', b'{"a": 2}'
    sha, other_sha = hashlib.sha256(content).hexdigest(), hashlib.sha256(other).hexdigest()
    whole, named = replay_context(), replay_context()
    named.contents_until = -1
    assert whole.keeps_contents and not named.keeps_contents
    paths = [whole.write_file("s/a.json", content), whole.write_file("s/a.json", other)]
    assert paths == ["s/a.json", "s/a~2.json"]
    assert [
        named.name_file("s/a.json", len(content), sha),
        named.write_file("s/a.json", other),
    ] == paths
    assert [e.to_dict() for e in named.events] == [e.to_dict() for e in whole.events]
    assert named.files == {} and named.written == whole.written == {
        "s/a.json": sha,
        "s/a~2.json": other_sha,
    }
    with pytest.raises(ValueError, match="keeps the contents"):
        whole.name_file("s/b.json", 1, sha)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.text(max_size=30), st.integers(), st.booleans(), st.none(), st.floats()),
        min_size=1,
        max_size=5,
    )
)
def test_a_json_file_is_the_indented_json_of_its_payload_held_or_not(
    payload: dict[str, object],
) -> None:
    content, sha = json_file(payload)
    assert content == json.dumps(payload, ensure_ascii=False, indent=2).encode(
        "utf-8", "surrogatepass"
    )
    assert sha == hashlib.sha256(content).hexdigest()
    assert json_file(payload, memo=False) == (content, sha) == json_file(payload)
