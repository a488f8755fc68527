"""The replay context is the plug-in API and nothing more: every public name it has is one the
plug-in guide documents, and the engine's bookkeeping (``engine/recorder.py``) is not on it."""

from __future__ import annotations

import re
from pathlib import Path

from ctxbench.engine.context import ReplayContext
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
