"""The released framework versions ctxbench can replay through, and how each one installs.

A release is installed into its own virtual environment (the three pin conflicting versions of
httpx, pydantic and openai) and driven by a small program of ours, its *driver*, run with that
environment's python. The extra pins are the ones docs/sources.md found necessary by installing the
wheels: ``pip install dbgpt==0.8.2`` alone cannot import ``dbgpt.agent.core.context``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ctxbench.errors import UnknownNameError

#: how a release installs: a Python virtual environment (pip) or a Node one (npm)
Kind = Literal["python", "node"]


@dataclass(frozen=True)
class Release:
    """One installable release: the strategy it backs, what pip installs, which driver runs it."""

    #: the framework's short name in strategy names (``shipped:<framework>@<version>``)
    framework: str
    #: the distribution on the package registry
    distribution: str
    version: str
    #: further requirements the release needs to import and run offline
    extra: tuple[str, ...] = ()
    #: the driver program under ``ctxbench/shipped/drivers/``
    driver: str = ""
    #: vendored tiktoken encodings the env's tiktoken must find in ``TIKTOKEN_CACHE_DIR``
    tiktoken_encodings: tuple[str, ...] = ()
    #: ``node``: an npm package installed with ``npm install --prefix`` and driven by a JS
    #: driver run with the machine's ``node``
    kind: Kind = "python"

    @property
    def key(self) -> str:
        """``dbgpt==0.8.2``: what ``ctxbench shipped install`` takes."""
        return f"{self.framework}=={self.version}"

    @property
    def requirements(self) -> tuple[str, ...]:
        if self.kind == "node":  # npm's spelling of an exact version
            return (f"{self.distribution}@{self.version}", *self.extra)
        return (f"{self.distribution}=={self.version}", *self.extra)

    @property
    def install_command(self) -> str:
        return f"ctxbench shipped install {self.key}"


def node_release(framework: str, distribution: str, version: str) -> Release:
    """An npm package's release, driven by ``drivers/<framework>_driver.mjs`` under ``node``."""
    return Release(framework, distribution, version, driver=f"{framework}_driver.mjs", kind="node")


DBGPT = Release(
    framework="dbgpt",
    distribution="dbgpt",
    version="0.8.2",
    # docs/sources.md "Installing the releases": extras agent, simple-framework and client, plus the
    # undeclared dbgpt-ext, requests and httpx-sse; cachetools 8.x breaks the pydantic import.
    extra=(
        "dbgpt-ext==0.8.2",
        "numpy",
        "mcp",
        "pandas",
        "cloudpickle",
        "sqlalchemy",
        "sqlparse",
        "jinja2",
        "httpx",
        "requests",
        "httpx-sse",
        "cachetools<6",
        "tiktoken",
    ),
    driver="dbgpt_driver.py",
    tiktoken_encodings=("cl100k_base", "o200k_base"),
)
AGENTSCOPE = Release(
    framework="agentscope",
    distribution="agentscope",
    version="2.0.11",
    driver="agentscope_driver.py",
)
HERMES = Release(
    framework="hermes",
    distribution="hermes-agent",
    version="0.19.0",
    driver="hermes_driver.py",
)
LANGCHAIN_CORE = Release(
    framework="langchain_trim",
    distribution="langchain-core",
    version="1.8.3",
    driver="langchain_driver.py",
)
AUTOGEN_HEAD_TAIL = Release(
    framework="autogen_head_tail",
    distribution="autogen-core",
    version="0.7.5",
    driver="autogen_driver.py",
)
AUTOGEN_TOKEN_LIMITED = Release(
    framework="autogen_token_limited",
    distribution="autogen-core",
    version="0.7.5",
    driver="autogen_driver.py",
)

# The frameworks of issue 42: each driver's docstring names the release file and line of the
# compaction entry point and its defaults.
LANGCHAIN_SUMMARIZATION = Release(
    framework="langchain_summarization",
    distribution="langchain",
    version="1.5.2",
    driver="langchain_middleware_driver.py",
)
#: an earlier release of the same middleware: `ctxbench parity` between the two shows what
#: 1.5.2 changed (README, "Released framework code")
LANGCHAIN_SUMMARIZATION_1_1 = Release(
    framework="langchain_summarization",
    distribution="langchain",
    version="1.1.0",
    # its langgraph (1.0.10, the newest its range allows) fails to import with today's
    # langgraph-prebuilt 1.0.13 (ExecutionInfo); 1.0.8 is the oldest that langgraph accepts
    extra=("langgraph-prebuilt==1.0.8",),
    driver="langchain_middleware_driver.py",
)
LANGCHAIN_CLEAR_TOOL_USES = Release(
    framework="langchain_clear_tool_uses",
    distribution="langchain",
    version="1.5.2",
    driver="langchain_middleware_driver.py",
)
STRANDS = Release(
    framework="strands",
    distribution="strands-agents",
    version="1.62.0",
    driver="strands_driver.py",
)
OPENAI_AGENTS_TRIMMER = Release(
    framework="openai_agents_trimmer",
    distribution="openai-agents",
    version="0.24.0",
    driver="openai_agents_driver.py",
)
AGENT_FRAMEWORK = Release(
    framework="agent_framework",
    distribution="agent-framework-core",
    version="1.26.0",
    driver="agent_framework_driver.py",
)
GOOGLE_ADK = Release(
    framework="google_adk",
    distribution="google-adk",
    version="2.13.0",
    driver="google_adk_driver.py",
)
INSPECT = Release(
    framework="inspect",
    distribution="inspect-ai",
    version="0.3.285",
    driver="inspect_driver.py",
    # ModelAPI.count_text_tokens: tiktoken o200k_base (model/_model.py:509)
    tiktoken_encodings=("o200k_base",),
)
#: deepagents ships its own summarization middleware (history offload to a backend, argument
#: truncation), not langchain's configured
DEEPAGENTS = Release(
    framework="deepagents",
    distribution="deepagents",
    version="0.7.32",
    driver="deepagents_driver.py",
)
# npm packages: a Node environment (``npm install --prefix``), the machine's node
GEMINI_CLI = node_release("gemini_cli", "@google/gemini-cli-core", "0.61.0")
PI = node_release("pi", "@earendil-works/pi-coding-agent", "1.6.0")

RELEASES: tuple[Release, ...] = (
    DBGPT,
    AGENTSCOPE,
    HERMES,
    LANGCHAIN_CORE,
    AUTOGEN_HEAD_TAIL,
    AUTOGEN_TOKEN_LIMITED,
    LANGCHAIN_SUMMARIZATION,
    LANGCHAIN_SUMMARIZATION_1_1,
    LANGCHAIN_CLEAR_TOOL_USES,
    STRANDS,
    OPENAI_AGENTS_TRIMMER,
    AGENT_FRAMEWORK,
    GOOGLE_ADK,
    INSPECT,
    DEEPAGENTS,
    GEMINI_CLI,
    PI,
)


def environment_key(release: Release) -> str:
    """The directory name of a release's environment: releases of one distribution and version
    share it (both AutoGen contexts come from ``autogen-core``); an npm scope's ``@`` and ``/``
    become ``-`` (``@google/gemini-cli-core`` -> ``google-gemini-cli-core-0.61.0``)."""
    name = release.distribution.lstrip("@").replace("/", "-")
    return f"{name}-{release.version}"


def find_release(key: str) -> Release:
    """The release named ``framework==version`` (or the distribution's own name; an npm
    package also as ``@scope/name@version``)."""
    for release in RELEASES:
        if key in (release.key, f"{release.distribution}=={release.version}",
                   release.requirements[0]):  # fmt: skip
            return release
    import difflib

    known = sorted({r.key for r in RELEASES})
    close = difflib.get_close_matches(key, known, n=2, cutoff=0.4)
    raise UnknownNameError(
        f"unknown release {key!r}; known: {', '.join(known)}",
        hint=f"did you mean {' or '.join(repr(c) for c in close)}?"
        if close
        else "run `ctxbench shipped list` to see them",
    )
