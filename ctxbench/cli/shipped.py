"""``ctxbench shipped``: install, list and remove the environments of framework releases."""

from __future__ import annotations

import json

import click

from ctxbench.cli.options import json_option
from ctxbench.shipped import environment
from ctxbench.shipped.releases import RELEASES, find_release


@click.group("shipped")
def shipped() -> None:
    """Environments of released framework code (`shipped:<framework>@<version>` strategies).

    \b
    Examples:
      ctxbench shipped install dbgpt==0.8.2
      ctxbench shipped list
      ctxbench shipped remove hermes==0.19.0
    """


@shipped.command("install")
@click.argument("releases", nargs=-1, required=True)
@click.option("--force", is_flag=True, help="Rebuild an environment that is already installed.")
def install(releases: tuple[str, ...], force: bool) -> None:
    """Build the environment of each RELEASE (`framework==version`) from the package registry."""
    for key in releases:
        release = find_release(key)
        env, built = environment.install(release, force=force)
        how = (
            f"installed in {env.manifest.install_seconds:g} s"
            if built
            else "already installed (reused)"
        )
        click.echo(f"{release.key}: {how}; env {env.manifest.env_hash} at {env.root}")


@shipped.command("list")
@json_option("Print the environments as JSON.")
def list_(as_json: bool) -> None:
    """The known releases, whether each is installed, its hash and install time."""
    from ctxbench.strategies import SHIPPED_STRATEGIES

    rows = []
    for release, env in environment.listing():
        name = f"shipped:{release.framework}@{release.version}"
        rows.append(
            {
                "release": release.key,
                "strategy": name if name in SHIPPED_STRATEGIES else None,
                "installed": env is not None,
                "env_hash": env.manifest.env_hash if env else None,
                "install_seconds": env.manifest.install_seconds if env else None,
                "path": str(env.root) if env else None,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        state = (
            f"installed  env {row['env_hash']}  ({row['install_seconds']:g} s)  {row['path']}"
            if row["installed"]
            else f"not installed  (`ctxbench shipped install {row['release']}`)"
        )
        strategy = row["strategy"] or "(no driver yet)"
        click.echo(f"{row['release']:<28} {strategy:<38} {state}")


@shipped.command("remove")
@click.argument("releases", nargs=-1, required=True)
def remove(releases: tuple[str, ...]) -> None:
    """Delete the environment of each RELEASE."""
    for key in releases:
        release = find_release(key)
        gone = environment.remove(release)
        click.echo(f"{release.key}: {'removed' if gone else 'was not installed'}")


__all__ = ["RELEASES", "shipped"]
