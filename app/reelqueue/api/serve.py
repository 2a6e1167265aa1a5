"""Running the engine and the HTTP API together in one headless process (``reelqueue
serve``), on one asyncio loop, until SIGTERM / SIGINT; and :func:`start_api`, the API on a
session that already runs (the window's, under qasync)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from dataclasses import dataclass
from typing import Any

from reelqueue.api.connections import ConnectionLimits, fitted, open_files_limit
from reelqueue.api.server import ApiServer
from reelqueue.api.tls import (
    check_key_permissions,
    ensure_self_signed,
    fingerprint,
    public_key_pin,
    server_context,
)
from reelqueue.application import team
from reelqueue.application.context import AppContext
from reelqueue.application.remote import RemoteAccess
from reelqueue.application.serving import ServeOptions, check_options
from reelqueue.application.session import Session
from reelqueue.domain.errors import InputError


def run_serve(ctx: AppContext, options: ServeOptions) -> int:
    _check(ctx, options)
    return asyncio.run(_serve(ctx, options))


def _check(ctx: AppContext, options: ServeOptions) -> None:
    # With --store (issue 21) the tokens and the API's reads are the team database's too
    # (RemoteAccess.open): several machines' APIs answer as one queue.
    del ctx
    check_options(options)


@dataclass
class RunningApi:
    """An API served on a running session. Attributes: url, fingerprint (None without
    TLS), server, access, public_key_pin (None without TLS: ``sha256//base64``, stable
    across renewals); :meth:`stop` closes the site and the API's own connections (the
    session is the caller's and keeps running)."""

    url: str
    fingerprint: str | None
    server: ApiServer
    access: RemoteAccess
    public_key_pin: str | None = None
    open_files: tuple[int, int, int] = (0, 0, 0)
    """RLIMIT_NOFILE: soft before start, soft now (raised where allowed), hard."""

    def limits_line(self) -> str:
        before, now, hard = self.open_files
        limits = self.server.connections.limits
        raised = f" (raised from {before})" if now != before else ""
        return (f"Open files: limit {now}{raised}, hard {hard}; serving at most "
                f"{limits.max_connections} connections, {limits.max_handshakes} TLS "
                f"handshakes at once ({limits.handshake_seconds:g} s each), idle "
                f"connections closed after {limits.idle_seconds:g} s (SSE streams "
                f"exempt); {limits.reserve()} kept for connections trusted after "
                f"a request with a valid token; untrusted ones at most "
                f"{limits.max_per_address} per address and {limits.max_per_subnet} per "
                f"/24 (IPv6 /64), their first request within "
                f"{limits.first_request_seconds:g} s")

    async def stop(self) -> None:
        await self.server.stop()
        self.access.close()


def connection_limits(options: ServeOptions) -> ConnectionLimits:
    """The connection limits ``options`` give (``reelqueue serve --max-connections`` and
    the like; the others their defaults); InputError naming each one not allowed."""
    given: dict[str, Any] = dict(options.connections)  # each field's own type: argparse
    try:
        limits = dataclasses.replace(ConnectionLimits(), **given)
    except TypeError as exc:
        raise InputError(f"Unknown connection limit: {exc}.") from None
    problems = limits.problems()
    if problems:
        raise InputError("; ".join(problems) + ".")
    return limits


async def start_api(ctx: AppContext, session: Session, options: ServeOptions,
                    limits: ConnectionLimits | None = None) -> RunningApi:
    """Serve the API for ``session``'s running engine, on the running loop (the command
    line's session in ``serve``, or the window's under qasync: one process owns a data
    folder, so the window serves its own engine rather than a second one). OSError when
    the address is taken; InputError for options that are not allowed."""
    _check(ctx, options)
    ssl_context = None
    print_fingerprint = pin = None
    if options.tls:
        cert, key = ((options.cert, options.key)
                     if options.cert is not None and options.key is not None
                     else await asyncio.to_thread(ensure_self_signed, ctx.data_dir,
                                                  options.host))
        check_key_permissions(key, insecure_ok=options.key_insecure_ok)
        ssl_context = server_context(cert, key)
        print_fingerprint, pin = fingerprint(cert), public_key_pin(cert)
    wanted = limits or connection_limits(options)
    open_files = open_files_limit()
    access = await RemoteAccess.open(ctx, session, options.max_waiting)
    server = ApiServer(access, options.host, options.port, ssl_context,
                       fitted(wanted, open_files[1]))
    try:
        await server.start()
    except BaseException:
        await server.stop()
        access.close()
        raise
    scheme = "http" if ssl_context is None else "https"
    shown = f"[{options.host}]" if ":" in options.host else options.host
    return RunningApi(f"{scheme}://{shown}:{server.port}/v1", print_fingerprint, server,
                      access, pin, open_files)


async def _serve(ctx: AppContext, options: ServeOptions) -> int:
    session = Session(ctx)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    running: RunningApi | None = None
    joined = False
    config = options.engine
    # Several machines share the queue (issue 21): take over expired leases only.
    config = session.mode.engine_config(config)
    try:
        report = await session.start(config, paused=options.paused)
        await team.join(session)  # listed in the instances registry (a team's)
        joined = True
        for problem in session.keyring_problems:
            ctx.print(f"Keyring: {problem}")
        ctx.print(report.summary())
        running = await start_api(ctx, session, options)
        if running.fingerprint is not None:
            ctx.print(f"TLS certificate fingerprint (SHA-256) {running.fingerprint}")
            ctx.print(f"TLS public key pin {running.public_key_pin} (kept across renewals; "
                      "curl --pinnedpubkey takes it)")
        ctx.print(running.limits_line())
        ctx.print(f"Serving {running.url} (Ctrl+C stops)")
        await stop.wait()
    finally:
        if running is not None:
            await running.stop()
        if joined:
            with contextlib.suppress(Exception):  # a team database gone: the lease ends it
                await team.leave(session)
        await session.stop()
    ctx.print("Stopped; renders in flight are reattached the next time ReelQueue starts.")
    return 0
