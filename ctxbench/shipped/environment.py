"""One virtual environment per framework release, under ctxbench's cache directory.

``install`` is the one step that uses the package registry: it builds
``$CTXBENCH_CACHE/shipped/<distribution>-<version>/`` with the environment's own pip, fills the
environment's tiktoken cache from ctxbench's vendored files (so counting never downloads), and
records what was installed (``pip freeze``, its hash, the python version and how long the
install took) in ``ctxbench-env.json``. Replays only read that manifest and start the
environment's python; nothing from the release ever enters ctxbench's own environment.

An npm release (``kind="node"``) is a Node environment: ``npm install --prefix <dir>
--ignore-scripts --save-exact NAME@VERSION`` (its lockfile ``package-lock.json`` kept in the
folder), Node and npm from the machine's PATH (a clear error names the missing one and how
to install it), the manifest's "freeze" the lockfile's ``name@version`` of every package.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ctxbench.errors import CtxbenchError
from ctxbench.shipped.releases import RELEASES, Release, environment_key

CACHE_ENV_VAR = "CTXBENCH_CACHE"
MANIFEST_NAME = "ctxbench-env.json"
MANIFEST_SCHEMA = "ctxbench.shipped-env/1"
#: where tiktoken looks a file up in its cache: sha1 of the URL it would download it from
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


class EnvironmentMissingError(CtxbenchError):
    """A shipped strategy was asked for but its release's environment is not installed."""


class InstallError(CtxbenchError):
    """Building a release's environment failed (pip's own error is in the message)."""


class NodeMissingError(CtxbenchError):
    """An npm release needs ``node`` (and ``npm`` to install) on the PATH."""


#: the name of the package.json ctxbench writes in a Node environment's folder
NODE_PACKAGE_NAME = "ctxbench-env"
#: how to get Node when it is missing (the npm releases need node >= 20)
NODE_HINT = (
    "install Node.js 20 or newer with npm (Debian/Ubuntu: `apt-get install nodejs npm`; "
    "or https://nodejs.org), make sure `node` and `npm` are on PATH, then run the command again"
)


def node_tool(name: str, release: Release) -> str:
    """The path of ``node`` or ``npm``, or one clear error naming what is missing."""
    found = shutil.which(name)
    if found is None:
        raise NodeMissingError(
            f"{release.key} is an npm package: it needs `{name}` on PATH, and there is none",
            hint=NODE_HINT,
        )
    return found


def cache_root() -> Path:
    """``$CTXBENCH_CACHE``, else the user cache directory (``$XDG_CACHE_HOME`` or ~/.cache)."""
    explicit = os.environ.get(CACHE_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxbench"


def environment_dir(release: Release) -> Path:
    return cache_root() / "shipped" / environment_key(release)


@dataclass(frozen=True)
class Manifest:
    """What an installed environment holds; ``env_hash`` identifies it in result rows."""

    schema: str
    release: str
    requirements: tuple[str, ...]
    python: str
    freeze: tuple[str, ...]
    env_hash: str
    install_seconds: float
    #: ``python`` or ``node`` (the ``python`` field then holds node's version)
    kind: str = "python"

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            schema=str(data["schema"]),
            release=str(data["release"]),
            requirements=tuple(data["requirements"]),
            python=str(data["python"]),
            freeze=tuple(data["freeze"]),
            env_hash=str(data["env_hash"]),
            install_seconds=float(data["install_seconds"]),
            kind=str(data.get("kind", "python")),
        )

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    def version_of(self, distribution: str) -> str | None:
        """The installed version of ``distribution`` according to ``pip freeze``."""
        wanted = _normalise(distribution)
        for line in self.freeze:
            name, sep, version = line.partition("==")
            if sep and _normalise(name) == wanted:
                return version
        return None


@dataclass(frozen=True)
class Environment:
    """An installed release: the python to run its driver with, and what it holds."""

    release: Release
    root: Path
    manifest: Manifest

    @property
    def python(self) -> Path:
        return _python_of(self.root)

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"

    @property
    def tiktoken_cache(self) -> Path:
        return self.root / "tiktoken_cache"

    def command(self, program: Path) -> list[str]:
        """How a driver program runs: the env's python (unbuffered), or the machine's node."""
        if self.release.kind == "node":
            return [node_tool("node", self.release), str(program)]
        return [str(self.python), "-u", str(program)]

    def process_env(self) -> dict[str, str]:
        """The environment variables a driver runs with: offline, nothing of ctxbench's venv."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NODE_OPTIONS", "NODE_PATH")
        }
        if self.release.kind == "node":  # the driver imports the release from here
            env.update(CTXBENCH_NODE_MODULES=str(self.node_modules), NO_COLOR="1")
        env.update(
            TIKTOKEN_CACHE_DIR=str(self.tiktoken_cache),
            HF_HUB_OFFLINE="1",
            PYTHONNOUSERSITE="1",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONIOENCODING="utf-8",
        )
        return env


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _python_of(root: Path) -> Path:
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def installed(release: Release) -> Environment | None:
    """The installed environment of ``release``, or None."""
    root = environment_dir(release)
    manifest_path = root / MANIFEST_NAME
    entry = (
        root / "node_modules" / release.distribution / "package.json"
        if release.kind == "node"
        else _python_of(root)
    )
    if not manifest_path.is_file() or not entry.exists():
        return None
    try:
        manifest = Manifest.read(manifest_path)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if tuple(manifest.requirements) != release.requirements:
        return None
    return Environment(release, root, manifest)


def require(release: Release) -> Environment:
    """The installed environment, or one clear error naming the exact install command."""
    env = installed(release)
    if env is None:
        raise EnvironmentMissingError(
            f"the {release.key} environment is not installed under {cache_root()}; "
            f"install it with `{release.install_command}`"
        )
    return env


def install(release: Release, *, force: bool = False) -> tuple[Environment, bool]:
    """Build (or reuse) the environment of ``release``; returns it and whether it was built."""
    existing = installed(release)
    if existing is not None and not force:
        try:
            _fill_tiktoken_cache(existing)
        except OSError as exc:
            raise _cannot(exc, existing.root, "install") from None
        return existing, False
    if release.kind == "node":
        npm = node_tool("npm", release)
        node = node_tool("node", release)
    root = environment_dir(release)
    _clear(root)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot(exc, root.parent, "install") from None
    if release.kind == "node":
        return _install_node(release, root, npm, node), True
    started = time.perf_counter()
    _run([sys.executable, "-m", "venv", str(root)], release)
    python = _python_of(root)
    _run(
        [str(python), "-m", "pip", "install", "--no-input", "-q", *release.requirements],
        release,
    )
    freeze = tuple(
        line
        for line in _run([str(python), "-m", "pip", "freeze", "--all"], release).splitlines()
        if line.strip()
    )
    version = _run(
        [str(python), "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
        release,
    ).strip()
    manifest = Manifest(
        schema=MANIFEST_SCHEMA,
        release=release.key,
        requirements=release.requirements,
        python=version,
        freeze=freeze,
        env_hash=hashlib.sha256("\n".join(sorted(freeze)).encode()).hexdigest()[:16],
        install_seconds=round(time.perf_counter() - started, 1),
    )
    env = Environment(release, root, manifest)
    try:
        _fill_tiktoken_cache(env)
        manifest.write(root / MANIFEST_NAME)
    except OSError as exc:
        raise _cannot(exc, root, "install") from None
    return env, True


def _install_node(release: Release, root: Path, npm: str, node: str) -> Environment:
    """``npm install --prefix root`` of the exact version, install scripts off, lockfile kept."""
    started = time.perf_counter()
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "package.json").write_text(
            json.dumps({"name": NODE_PACKAGE_NAME, "private": True}) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise _cannot(exc, root, "install") from None
    _run(
        [npm, "install", "--prefix", str(root), "--ignore-scripts", "--save-exact",
         "--no-audit", "--no-fund", "--loglevel=error", *release.requirements],
        release,
    )  # fmt: skip
    freeze = _npm_freeze(root / "package-lock.json")
    version = _run([node, "--version"], release).strip()
    manifest = Manifest(
        schema=MANIFEST_SCHEMA,
        release=release.key,
        requirements=release.requirements,
        python=f"node {version}",
        freeze=freeze,
        env_hash=hashlib.sha256("\n".join(sorted(freeze)).encode()).hexdigest()[:16],
        install_seconds=round(time.perf_counter() - started, 1),
        kind="node",
    )
    try:
        manifest.write(root / MANIFEST_NAME)
    except OSError as exc:
        raise _cannot(exc, root, "install") from None
    return Environment(release, root, manifest)


def _npm_freeze(lockfile: Path) -> tuple[str, ...]:
    """Every installed package as ``name@version``, from npm's lockfile (sorted)."""
    try:
        packages = json.loads(lockfile.read_text(encoding="utf-8")).get("packages", {})
    except (OSError, ValueError) as exc:
        raise InstallError(f"npm wrote no readable lockfile: {exc}", path=lockfile) from None
    out = set()
    for path, meta in packages.items():
        if path and isinstance(meta, dict) and meta.get("version"):
            out.add(f"{path.rsplit('node_modules/', 1)[-1]}@{meta['version']}")
    return tuple(sorted(out))


def remove(release: Release) -> bool:
    """Delete the environment of ``release``; False when there was none."""
    root = environment_dir(release)
    if not root.exists() and not root.is_symlink():
        return False
    _clear(root)
    return True


def _clear(root: Path) -> None:
    """Remove an environment folder ctxbench built (it holds its manifest, ``pyvenv.cfg`` or the
    ``package.json`` ctxbench writes for npm);
    a link, a plain file or a folder it did not build is refused, never deleted, and a
    removal the OS refuses is one clear error."""
    fix = f"remove it yourself, or set {CACHE_ENV_VAR} to another folder"
    if root.is_symlink():
        raise InstallError(
            "is a symbolic link: ctxbench does not build or remove environments through links",
            path=root,
            hint=fix,
        )
    if not root.exists():
        return
    if not root.is_dir():
        raise InstallError("is not a folder: refusing to replace it", path=root, hint=fix)
    built = any((root / name).is_file() for name in (MANIFEST_NAME, "pyvenv.cfg"))
    if not built and not _ours(root / "package.json"):
        raise InstallError(
            f"was not built by ctxbench (no {MANIFEST_NAME}, no pyvenv.cfg, no package.json of "
            f"{NODE_PACKAGE_NAME!r}): refusing to delete it",
            path=root,
            hint=fix,
        )
    try:
        shutil.rmtree(root)
    except OSError as exc:
        raise _cannot(exc, root, "remove") from None


def _ours(package_json: Path) -> bool:
    """A Node environment's ``package.json`` ctxbench wrote (an npm install that stopped half way
    leaves it without a manifest)."""
    try:
        data = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("name") == NODE_PACKAGE_NAME


def _cannot(exc: OSError, path: Path, what: str) -> InstallError:
    return InstallError(
        f"cannot {what} the environment: {exc.strerror or exc}",
        path=getattr(exc, "filename", None) or path,
        hint=f"make {cache_root()} writable, or set {CACHE_ENV_VAR} to a writable folder",
    )


def listing() -> list[tuple[Release, Environment | None]]:
    return [(release, installed(release)) for release in RELEASES]


def _fill_tiktoken_cache(env: Environment) -> None:
    """Put ctxbench's vendored encodings where the environment's tiktoken looks first."""
    from ctxbench.counting.tiktoken_counter import ENCODINGS
    from ctxbench.counting.vendored import read_vendored

    if not env.release.tiktoken_encodings:
        return
    env.tiktoken_cache.mkdir(parents=True, exist_ok=True)
    for name in env.release.tiktoken_encodings:
        key = hashlib.sha1(_TIKTOKEN_URL.format(name=name).encode()).hexdigest()
        target = env.tiktoken_cache / key
        if not target.exists():
            target.write_bytes(read_vendored(ENCODINGS[name].file))


def _run(command: list[str], release: Release) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
        raise InstallError(
            f"installing {release.key} failed: `{' '.join(command[:5])} ...` exited "
            f"{done.returncode}: " + " | ".join(tail),
            hint="check that the package registry is reachable, then run the command again",
        )
    return done.stdout
