"""``kbdesk serve`` (the HTTP interface) and ``kbdesk mcp`` (an MCP server over stdio)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

import click

from kbdesk.cli.output import plain, stderr
from kbdesk.cli.state import CliState
from kbdesk.errors import InvalidInputError

if TYPE_CHECKING:
    pass

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
HARD_STOP = 5.0
"""Seconds after SIGTERM/SIGINT by which ``kbdesk serve`` has exited, whatever it was doing."""


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help="Address to listen on. Anything but this machine (loopback) needs --allow-remote.",
)
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--allow-remote", is_flag=True, help="Listen on an address other machines can reach (tokens protect it; use TLS)."
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="URL",
    help="Let web pages from URL call the API from a browser (repeatable; default: none).",
)
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False), help="Serve HTTPS with this certificate.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False), help="The certificate's private key.")
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
@click.option(
    "--url-sources",
    is_flag=True,
    help="Let tokens with kb.write add web pages by URL (the server fetches them; public addresses only).",
)
@click.option(
    "--url-host",
    "url_hosts",
    multiple=True,
    metavar="HOST",
    help="With --url-sources: a private-network host whose pages tokens may add too (repeatable).",
)
@click.pass_obj
def serve_command(
    state: CliState,
    host: str,
    port: int,
    allow_remote: bool,
    cors_origins: tuple[str, ...],
    ssl_certfile: str | None,
    ssl_keyfile: str | None,
    log_level: str,
    url_sources: bool,
    url_hosts: tuple[str, ...],
) -> None:
    """Serve the knowledge bases over HTTP under /api (OpenAPI at /api/docs).

    Every request needs a token (kbdesk token create). Uploads are indexed by the same
    pipeline as kbdesk add; documents a stop interrupted are finished at the next start.
    Web pages are fetched for a token only with --url-sources.
    """
    _need("uvicorn", "fastapi", "multipart")
    import uvicorn

    from kbdesk.serve import create_app
    from kbdesk.serve.app import STOP_GRACE

    if not is_loopback(host) and not allow_remote:
        raise InvalidInputError(
            f"{host} can be reached from other machines: add --allow-remote to listen there on "
            f"purpose (the default, {DEFAULT_HOST}, is this machine only)"
        )
    if bool(ssl_certfile) != bool(ssl_keyfile):
        raise InvalidInputError("--ssl-certfile and --ssl-keyfile go together")
    _check_free(host, port)
    desk = state.desk()
    active = len(desk.tokens().list())  # on a team server: for the owner of kbdesk's tables only
    app = create_app(desk, cors_origins=cors_origins, url_sources=url_sources, url_hosts=url_hosts)
    scheme = "https" if ssl_certfile else "http"
    shown = f"[{host}]" if ":" in host else host
    err = stderr()
    err.print(plain(f"kbdesk serving {desk.label} at {scheme}://{shown}:{port}/api (OpenAPI: /api/docs)"))
    if active == 0:
        err.print(
            plain("No tokens yet, so every request is refused: make one with kbdesk token create --user NAME"),
            style="yellow",
        )
    if not is_loopback(host):
        err.print(
            plain(
                f"Reachable from other machines. Protected by: bearer tokens ({active} active; kbdesk "
                "token list), per-token permissions" + (", TLS" if ssl_certfile else "") + "."
            ),
            style="yellow",
        )
        if not ssl_certfile:
            err.print(
                plain(
                    "Traffic is not encrypted: tokens and documents cross the network in clear. Put a TLS "
                    "proxy in front, or pass --ssl-certfile and --ssl-keyfile."
                ),
                style="yellow",
            )
    if cors_origins:
        err.print(plain(f"Browsers may call it from: {', '.join(cors_origins)}"))
    _log_to_stderr(log_level)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        proxy_headers=False,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        timeout_graceful_shutdown=STOP_GRACE,
    )
    server = _stopping_server(uvicorn.Server)(config)
    logging.getLogger("uvicorn.error").addFilter(_cut_short)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises the SIGINT it stopped on again (as uvicorn.run)
        server.run()


def _cut_short(record: logging.LogRecord) -> bool:
    """A request the stop cancelled is one line in the log, not uvicorn's traceback."""
    if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
        record.msg, record.args, record.exc_info = "a request still running at the stop was cut short", (), None
    return True


def _stopping_server(base: type) -> type:
    """uvicorn's server that, once asked to stop (SIGTERM, SIGINT), is gone within
    :data:`HARD_STOP` seconds whatever its requests are doing: requests in flight get
    :data:`~kbdesk.serve.app.STOP_GRACE` seconds, uploads being indexed the same (the next
    start finishes them), and a request still holding a thread after that (a query stuck in
    the database) is abandoned — its transaction is rolled back — rather than waited for."""

    class Server(base):
        _timer: threading.Timer | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            if self._timer is None:
                self._timer = threading.Timer(HARD_STOP, _abandon)
                self._timer.daemon = True
                self._timer.start()

    return Server


def _abandon() -> None:
    err = stderr()
    err.print(plain(f"kbdesk serve: requests still running {HARD_STOP:g} s after the stop were abandoned"))
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _check_free(host: str, port: int) -> None:
    """Refuse in one line an address that cannot be listened on (in use, not this machine's)."""
    import socket

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}: {exc.strerror or exc}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            hint = " (another kbdesk serve?): choose another with --port" if exc.errno == 98 else ""
            raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None


def _need(*modules: str) -> None:
    """The serve extra's packages, or one line saying how to install them."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise click.ClickException(f"this command needs {', '.join(missing)}: pip install 'kbdesk[serve]'")


@click.command("mcp")
@click.option(
    "--kb",
    "kbs",
    multiple=True,
    metavar="KB",
    help="Offer only this KB (name or id; repeatable). Default: every discoverable KB.",
)
@click.pass_obj
def mcp_command(state: CliState, kbs: tuple[str, ...]) -> None:
    """Run an MCP server over stdio (for editors, agents and desktop assistants).

    Tools: kb_search, kb_list, note_search; each KB's documents are resources.
    An MCP client starts it itself: see the README for the configuration snippet.
    """
    _need("mcp")
    from kbdesk.mcp.server import run
    from kbdesk.remote.names import split_refs

    desk = state.desk()
    local, remote = split_refs(list(kbs), desk.config.remotes)  # team:Product Docs: a remote's KB
    chosen = [desk.kb(ref).id for ref in local] + [str(r) for r in remote]  # an unknown KB: one line now
    _log_to_stderr("warning")
    if sys.stdin.isatty():
        stderr().print(
            plain(
                "kbdesk mcp speaks the Model Context Protocol on stdin/stdout: an MCP client starts "
                "it (see the README). Waiting for a client; Ctrl-D ends."
            ),
            style="dim",
        )
    run(desk, chosen or None)


def _log_to_stderr(level: str) -> None:
    """kbdesk's own log lines on stderr, each one inert line (they may quote names from
    documents), beside uvicorn's."""
    import logging

    from kbdesk.textsafe import inert_line

    class Inert(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return inert_line(super().format(record)) if not record.exc_info else super().format(record)

    logger = logging.getLogger("kbdesk")
    if not any(getattr(h, "kbdesk_stderr", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(Inert("%(levelname)-9s %(name)s: %(message)s"))
        handler.kbdesk_stderr = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
