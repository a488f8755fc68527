"""Rendering pages: any text stays text (no tag, attribute or script can be injected)."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.report import table as tb
from ctxbench.report.page import Bullets, Heading, Page, Paragraph, Section, TableBlock
from ctxbench.report.render import render_page

HOSTILE = st.one_of(
    st.text(min_size=1, max_size=60),
    st.sampled_from(
        [
            "<script>window.__pwned=1</script>",
            '"><img src=x onerror="window.__pwned=2">',
            "</textarea></style></script><svg onload=alert(1)>",
            "{{ 7*7 }}{% raw %}",
            "javascript:alert(1)",
        ]
    ),
)


class Tags(HTMLParser):
    """Every start tag, and every attribute name, in the document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page(text: str) -> Page:
    cells = [tb.text(text), tb.code(text), tb.details(text, text), tb.number(1.5)]
    return Page(
        title=text,
        subtitle=text,
        facts=((text, text),),
        sections=(
            Section(
                "s",
                text,
                (
                    Paragraph(text),
                    Bullets((text,)),
                    Heading(text),
                    TableBlock(
                        tb.table(
                            "t",
                            tb.columns(text, "b", "c", ("d", True)),
                            [cells],
                            caption=text,
                            note=text,
                        )
                    ),
                ),
            ),
        ),
    )


BASELINE = Tags()
BASELINE.feed(render_page(_page("plain")))


@settings(max_examples=60, deadline=None)
@given(HOSTILE)
def test_any_text_renders_as_text_with_the_same_elements_as_plain_text(text: str) -> None:
    parsed = Tags()
    parsed.feed(render_page(_page(text)))
    assert parsed.tags == BASELINE.tags
    assert parsed.attributes == BASELINE.attributes


def test_the_page_has_one_script_and_no_external_reference() -> None:
    html = render_page(_page("x"))
    assert BASELINE.tags.count("script") == 1
    assert "src=" not in html and "<link" not in html
