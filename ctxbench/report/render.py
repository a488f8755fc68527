"""Rendering a :class:`~ctxbench.report.page.Page` to one self-contained HTML file.

Jinja2 with autoescaping always on: every string from results or traces is escaped, whatever
it holds. The stylesheet and script ship as package files and are inlined; a Content Security
Policy in the page allows only that script (by its sha256) and data: images, so the page can
make no request, and even markup that slipped through escaping could not run a script.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from ctxbench.report.page import Page

if TYPE_CHECKING:
    from jinja2 import Environment

PACKAGE = "ctxbench.report"


def _asset(name: str) -> str:
    return resources.files(PACKAGE).joinpath("templates").joinpath(name).read_text("utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


@cache
def environment() -> Environment:
    """The Jinja2 environment of the report templates (autoescape on for every template)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined
    from markupsafe import Markup

    env = Environment(
        loader=PackageLoader(PACKAGE, "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    # Only Chart.svg goes through this filter: ctxbench.report.svg draws it, escaping every text.
    env.filters["trusted_svg"] = Markup
    return env


def render_page(page: Page) -> str:
    """The page as one HTML document: inline CSS, inline JS, inline SVG, no external request."""
    from markupsafe import Markup

    script = _asset("report.js")
    css = _asset("report.css")
    template = environment().get_template("page.html.j2")
    return template.render(page=page, css=Markup(css), js=Markup(script), csp=_csp(script))
