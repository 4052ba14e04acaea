"""The ``sim-web`` command.

Examples::

    sim-web serve --port 8000 --workers 4      # the HTTP tool server over the sample index
    sim-web demo                               # one scripted episode, printed
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import entry_points

from sim_web.bundle.cli import add_gpukit_parser
from sim_web.bundle.cli import add_parser as add_bundle_parser
from sim_web.serve.conn import HEADER_TIMEOUT_S, KEEP_ALIVE_S, ConnectionLimits
from sim_web.serve.warm import DEFAULT_WARM_SEARCHES
from simweb_core.errors import WikiIndexError


def _count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    """An argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _serve(args: argparse.Namespace) -> int:
    from sim_web.serve.guards import TOKEN_ENV, check_exposure
    from sim_web.serve.http import serve
    from simweb_core.settings import env

    token = args.token or env(TOKEN_ENV) or None
    check_exposure(args.host, token)  # refuse before printing that we serve
    tools = "search, visit, google_scholar" + (", PythonInterpreter" if args.enable_python else "")
    print(
        f"sim-web tool server on http://{args.host}:{args.port} (docs at /docs, schema at /openapi.json); tools: {tools}; "
        f"{'bearer token required' if token else 'no authentication (loopback only)'}",
        flush=True,
    )
    serve(
        args.index,
        args.host,
        args.port,
        args.workers,
        args.mode,
        cache=args.cache,
        enable_python=args.enable_python,
        token=token,
        max_body_bytes=args.max_body_bytes,
        tool_threads=args.tool_threads,
        max_calls_per_client=args.max_calls_per_client,
        backend=args.backend,
        warm_searches=args.warm_searches,
        limits=_limits(args),
    )
    return 0


def _limits(args: argparse.Namespace) -> ConnectionLimits:
    """The connection limits of ``sim-web serve`` (unset ones: the defaults)."""
    given = {
        "header_timeout_s": args.header_timeout,
        "keep_alive_s": args.keep_alive,
        "max_connections": args.max_connections,
    }
    return ConnectionLimits(**{k: v for k, v in given.items() if v is not None})


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
    print(f"error: {message}", file=sys.stderr)
    return 2


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of ``sim-web``."""
    p = argparse.ArgumentParser(prog="sim-web", description="The simulated web for deep-research agents.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the tools over HTTP")
    s.add_argument("--index", default=None, help="index directory (default: the sample index)")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address; anything but loopback needs a token (--token or $SIM_WEB_SERVER_TOKEN)",
    )
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    s.add_argument("--mode", default="bm25", choices=["bm25", "dense", "hybrid"], help="retrieval mode")
    s.add_argument(
        "--backend",
        default="sim",
        choices=["sim", "real"],
        help="sim: the index; real: Serper + Jina (keys from $SERPER_KEY_ID, $JINA_API_KEYS), the index as fallback",
    )
    s.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True, help="content-keyed result cache")
    s.add_argument(
        "--enable-python",
        action="store_true",
        help="also serve PythonInterpreter (runs client code in the bubblewrap sandbox; off by default)",
    )
    s.add_argument(
        "--token",
        default=None,
        help="bearer token required on /tools and /backend routes "
        "(default: $SIM_WEB_SERVER_TOKEN; prefer the variable: arguments are visible to other users)",
    )
    s.add_argument("--max-body-bytes", type=int, default=1024 * 1024, help="request body limit; larger bodies get 413")
    s.add_argument("--tool-threads", type=int, default=32, help="threads per worker that run tool calls")
    s.add_argument(
        "--max-calls-per-client",
        type=_count,
        default=0,
        metavar="N",
        help="calls one client (peer address) may have in progress per worker; more are answered 429 (0: no cap; "
        "the threads are shared between clients in round robin either way). Set it on a server many trainers "
        "share; behind a load balancer every call comes from one address, so cap clients there instead",
    )
    s.add_argument(
        "--warm-searches",
        type=_count,
        default=DEFAULT_WARM_SEARCHES,
        help="varied searches each worker runs before it takes connections, so that Lucene's JIT has "
        "settled (0: none; a worker then runs slower, with latency spikes, for its first minute)",
    )
    s.add_argument(
        "--header-timeout",
        type=_seconds,
        default=None,
        metavar="S",
        help=f"close a connection whose request (headers and body) has not arrived S seconds after it opens "
        f"(or after the request's first byte), so stalled clients cannot hold connections "
        f"(default: {HEADER_TIMEOUT_S:g})",
    )
    s.add_argument(
        "--keep-alive",
        type=_positive,
        default=None,
        metavar="S",
        help=f"seconds an idle keep-alive connection stays open between requests (default: {KEEP_ALIVE_S})",
    )
    s.add_argument(
        "--max-connections",
        type=_positive,
        default=None,
        metavar="N",
        help="open connections per worker; past it the one that has waited longest on its client is closed "
        "(default: a quarter of the open-file limit, see `ulimit -n`)",
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
    args = make_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return args.func(args)
    except WikiIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
