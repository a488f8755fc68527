"""Progress bars: drawn with an ETA on a terminal, silent under --quiet and in a pipe."""

from __future__ import annotations

import io

from ctxbench.cli.progress import StageBar, terminal_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_an_eta() -> None:
    out = Terminal()
    bar = terminal_bar("count", stream=out)
    bar.update(0, 10)
    bar.update(10, 10, final=True)
    bar.close()
    text = out.getvalue()
    assert "count [" in text and "10/10" in text and "ETA" in text
    assert text.endswith("\n")


def test_quiet_and_pipes_stay_silent() -> None:
    for stream, quiet in ((Terminal(), True), (io.StringIO(), False)):
        bar = terminal_bar("drift", quiet=quiet, stream=stream)
        bar.update(1, 2)
        bar.update(2, 2, final=True)
        bar.close()
        assert stream.getvalue() == ""


def test_stages_rename_one_bar() -> None:
    out = Terminal()
    bar = StageBar("report", stream=out)
    bar.stage("reading results")
    bar.update(1, 4)
    bar.stage("drawing")
    bar.close()
    text = out.getvalue()
    assert "report: reading results" in text and "report: drawing [######" in text
