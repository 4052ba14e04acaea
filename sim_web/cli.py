"""The ``sim-web`` command.

Examples::

    sim-web serve --port 8000 --workers 4      # the HTTP tool server over the sample index
    sim-web demo                               # one scripted episode, printed
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points

from sim_web.bundle.cli import add_gpukit_parser
from sim_web.bundle.cli import add_parser as add_bundle_parser
from sim_web.serve.config import ServeConfig
from simweb_core.cli import add_config_flags, given_flags, print_error, read_secret_file, run_command

#: ``sim-web serve``'s flags: each one a :class:`~sim_web.serve.config.ServeConfig` field (its help, type and default).
SERVE_FLAGS = {
    "--index": "index",
    "--host": "host",
    "--port": "port",
    "--workers": "workers",
    "--mode": "mode",
    "--backend": "backend",
    "--cache": "cache",
    "--enable-python": "enable_python",
    "--max-body-bytes": "max_body_bytes",
    "--tool-threads": "tool_threads",
    "--max-in-progress": "max_in_progress",
    "--max-calls-per-client": "max_calls_per_client",
    "--trusted-proxies": "trusted_proxies",
    "--warm-searches": "warm_searches",
    "--header-timeout": "limits.header_timeout_s",
    "--keep-alive": "limits.keep_alive_s",
    "--max-connections": "limits.max_connections",
    "--max-sessions": "openenv.max_sessions",
    "--max-sessions-per-client": "openenv.max_sessions_per_client",
    "--session-idle-timeout": "openenv.idle_timeout_s",
}


def server_token(args: argparse.Namespace) -> str | None:
    """The server's bearer token: ``--token``, else the file of ``--token-file``, else ``$SIM_WEB_SERVER_TOKEN``.

    Raises:
        ConfigError: When ``--token-file`` names a file that cannot be read or is empty.
    """
    from sim_web.serve.guards import TOKEN_ENV
    from simweb_core.secret import register
    from simweb_core.settings import env

    if args.token:
        register(args.token)
        return str(args.token)
    if args.token_file:
        return read_secret_file(args.token_file, "--token-file")
    token = env(TOKEN_ENV) or None
    if token:
        register(token)
    return token


def _serve(args: argparse.Namespace) -> int:
    from sim_web.serve.guards import check_exposure
    from sim_web.serve.http import serve
    from simweb_core.data import from_data
    from simweb_core.overrides import apply_overrides

    cfg = from_data(ServeConfig, apply_overrides({}, given_flags(args)))
    token = server_token(args) or None
    check_exposure(cfg.host, token)  # refuse before printing that we serve
    tools = "search, visit, google_scholar" + (", PythonInterpreter" if cfg.enable_python else "")
    print(
        f"sim-web tool server on http://{cfg.host}:{cfg.port} (docs at /docs, schema at /openapi.json); tools: {tools}; "
        f"{'bearer token required' if token else 'no authentication (loopback only)'}",
        flush=True,
    )
    serve(cfg, token)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from sim_web.demo import main as demo_main

    return demo_main(["--index", args.index] if args.index else [])


#: The entry-point group of the subcommands that packages built on sim_web provide (``training``, ``agents``; see
#: ``[project.entry-points."sim_web.commands"]`` in pyproject.toml). Each entry point names a function
#: ``add_parser(subparsers) -> None`` that registers one subcommand whose ``func(args) -> int`` runs it; sim_web
#: itself never names those packages, so its imports stay one way.
COMMANDS_GROUP = "sim_web.commands"


def _add_plugins(sub: argparse._SubParsersAction) -> None:
    """Register the subcommands of :data:`COMMANDS_GROUP` (sorted by name); one whose module is not installed gets
    a stand-in that says so when run."""
    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            add_parser = ep.load()
        except ModuleNotFoundError as e:
            if not e.name or not (ep.module == e.name or ep.module.startswith(e.name + ".")):
                raise  # a missing import inside an installed module is a bug or a missing dependency: show it
            _add_missing(sub, ep.name, ep.module)
            continue
        add_parser(sub)


def _add_missing(sub: argparse._SubParsersAction, name: str, module: str) -> None:
    """A stand-in for subcommand ``name`` whose module is not installed: listed in ``--help``, an error when run."""
    message = (
        f"`sim-web {name}` is provided by the module {module}, which is not installed; install the package "
        f"that contains it (from a sim-web checkout: pip install -e .)"
    )
    # no option prefix and no -h: every argument after the name lands in `rest`, so any call prints the message
    p = sub.add_parser(name, help=f"(not installed: {module})", description=message, prefix_chars="\0", add_help=False)
    p.add_argument("rest", nargs="*")
    p.set_defaults(func=lambda _args: _fail(message))


def _fail(message: str) -> int:
    print_error(message)
    return 2


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of ``sim-web``."""
    p = argparse.ArgumentParser(prog="sim-web", description="The simulated web for deep-research agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the tools over HTTP")
    add_config_flags(s, ServeConfig, SERVE_FLAGS)
    s.add_argument(
        "--token",
        default=None,
        help="bearer token required on /tools and /backend routes (default: --token-file, else "
        "$SIM_WEB_SERVER_TOKEN). A flag's value is visible to every user of the machine in `ps`: prefer the variable "
        "or --token-file",
    )
    s.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="read the bearer token from the first line of this file (kept out of `ps`; make it mode 600)",
    )
    s.set_defaults(func=_serve)
    d = sub.add_parser("demo", help="play one scripted episode on the sample and print it")
    d.add_argument("--index", default=None)
    d.set_defaults(func=_demo)
    add_bundle_parser(sub)
    add_gpukit_parser(sub)
    _add_plugins(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``sim-web``; returns the exit status."""
    return run_command(make_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
