"""AgentScope's offloaded files (issue 38, items 3 and 4): an image's extension comes from an
allow-list of media types, never from the trace (``data:image/html`` once became an ``.html``
file the viewer linked); a run's offloaded files are bounded in number and bytes, with one
error naming the limit."""

from __future__ import annotations

import base64
import hashlib

import pytest

from ctxbench.engine import events as ev
from ctxbench.errors import OutputError
from ctxbench.strategies.agentscope import offload
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.trace import Message, Part, Trace
from tests.factories import tool_trace
from tests.strategies.test_agentscope import PNG, run

SCRIPT = base64.b64encode(b"<script>parent.document.title='pwned'</script>").decode()


SVG = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>").decode()


def image_trace(urls: list[str]) -> Trace:
    msgs = [Message("system", "sys")]
    for i, url in enumerate(urls):
        part = Part("image_url", data={"image_url": {"url": url}, "name": f"img{i}"})
        msgs.append(Message.from_parts("user", [Part("text", f"look {i}"), part]))
        msgs.append(Message("assistant", f"seen {i}"))
    return Trace("img", tuple(msgs))


def test_an_image_extension_comes_from_the_allow_list() -> None:
    urls = [
        f"data:image/html;base64,{SCRIPT}",
        f"data:image/svg+xml;base64,{SVG}",
        f"data:image/png;base64,{PNG}",
        f"data:image/JPEG;base64,{PNG}",
        "https://example.com/kept.png",
    ]
    out = run(image_trace(urls), 100_000, max_image_num=1)
    names = sorted(p.rsplit(".", 1)[1] for p in out.files if p.startswith("offload/img/image-"))
    assert names == ["bin", "bin", "jpeg", "png"]
    assert not any(p.endswith((".html", ".svg+xml", ".svg")) for p in out.files)


def test_image_file_reads_only_image_data_urls() -> None:
    assert offload.image_file(f"data:image/png;base64,{PNG}") == ("png", base64.b64decode(PNG))
    assert offload.image_file(f"data:image/x-icon;base64,{PNG}")[0] == "bin"  # type: ignore[index]
    assert offload.image_file(f"data:text/html;base64,{SCRIPT}") is None
    assert offload.image_file("https://example.com/a.png") is None


def test_a_run_offloading_past_the_bytes_limit_stops_with_one_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(offload, "MAX_BYTES", 5_000)
    trace = tool_trace(6, output="r" * 3_000)  # each tool result offloads ~2,600 bytes
    with pytest.raises(OutputError, match="more than 10,000 files or 5,000 bytes"):
        run(trace, 100_000, tool_result_limit=100)
    monkeypatch.setattr(offload, "MAX_BYTES", 10**9)
    monkeypatch.setattr(offload, "MAX_FILES", 2)
    with pytest.raises(OutputError, match="more than 2 files"):
        run(trace, 100_000, tool_result_limit=100)


def test_under_the_limits_the_files_are_those_written() -> None:
    trace = tool_trace(3, output="r" * 3_000)
    out = run(trace, 100_000, tool_result_limit=100)
    written = [p for p in out.files if "tool_result-" in p]
    assert len(written) == 3
    assert all(len(out.files[p]) > 2_000 for p in written)


def test_the_offloaded_context_is_one_file_appended_to() -> None:
    """Each compaction once wrote a new copy of everything offloaded so far (``context.jsonl``,
    ``context~2.jsonl``, ...): disk and memory grew with the square of the trace."""
    out = run(
        tool_trace(120, output="r" * 400), 20_000, context_size=4000, summarizer=FailingSummarizer()
    )
    compactions = [e for e in out.events if e.type == ev.COMPACTION and e["layer"] == "compression"]
    assert len(compactions) >= 3
    assert [p for p in out.files if p.startswith("offload/t/")] == ["offload/t/context.jsonl"]
    content = out.files["offload/t/context.jsonl"]
    lines = content.decode("utf-8").splitlines()
    assert len(lines) == len(set(lines))  # every offloaded message once
    snapshots = [e for e in out.events if e.type == ev.SNAPSHOT and "context" in e["path"]]
    assert len(snapshots) == len(compactions)
    sizes = [e["bytes"] for e in snapshots]
    assert sizes == sorted(set(sizes)) and sizes[-1] == len(content)
    assert snapshots[-1]["sha256"] == hashlib.sha256(content).hexdigest()
    assert {e["path"] for e in snapshots} == {"offload/t/context.jsonl"}
