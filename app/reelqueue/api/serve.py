"""Running the engine and the HTTP API together in one headless process (``reelqueue
serve``), on one asyncio loop, until SIGTERM / SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass

from reelqueue.api.server import ApiServer, ApiServices
from reelqueue.api.tls import ensure_self_signed, fingerprint, server_context
from reelqueue.application.builtin_mock import builtin_mock
from reelqueue.application.context import AppContext
from reelqueue.application.serving import ServeOptions, check_options
from reelqueue.application.submit import JobSubmitter
from reelqueue.domain.errors import InputError
from reelqueue.engine.engine import Engine
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store
from reelqueue.store.journal_reader import JournalReader
from reelqueue.store.tokens import TokenStore


def run_serve(ctx: AppContext, options: ServeOptions) -> int:
    check_options(options)
    if ctx.store_url is not None:
        # Tokens and the API's reads live in the local SQLite journal (docs/api.md).
        raise InputError("'reelqueue serve' runs on the local journal only; drop --store "
                         "(a team queue is served by its workers, not over this API yet).")
    with ctx.open_store() as store, builtin_mock(store) as providers:
        return asyncio.run(_serve(ctx, store, options, providers))


def _key_lookup() -> object:
    from reelqueue.credentials.keystore import KeyStore

    return KeyStore().get_key


@dataclass
class RunningApi:
    """An API served on a running engine. Attributes: url, fingerprint (None without
    TLS), server; :meth:`stop` closes the site and the API's own connections (the engine
    is the caller's and keeps running)."""

    url: str
    fingerprint: str | None
    server: ApiServer
    reader: JournalReader
    tokens: TokenStore

    async def stop(self) -> None:
        await self.server.stop()
        self.reader.close()
        self.tokens.close()


async def start_api(ctx: AppContext, engine: Engine, options: ServeOptions) -> RunningApi:
    """Serve the API for ``engine``, on the running loop (the command line's engine in
    ``serve``, or the window's under qasync: one process owns a data folder, so the
    window serves its own engine rather than a second one)."""
    check_options(options)
    ssl_context = None
    print_fingerprint = None
    if options.tls:
        cert, key = ((options.cert, options.key)
                     if options.cert is not None and options.key is not None
                     else await asyncio.to_thread(ensure_self_signed, ctx.data_dir,
                                                  options.host))
        ssl_context = server_context(cert, key)
        print_fingerprint = fingerprint(cert)
    reader = JournalReader(ctx.journal_path)
    tokens = TokenStore(ctx.journal_path)
    submitter = JobSubmitter(engine, reader, ctx.videos_dir,
                             RegistryCatalog(engine.providers), options.max_waiting)
    services = ApiServices(engine, submitter, reader, tokens,
                           upload_root=ctx.data_dir / "uploads")
    server = ApiServer(services, options.host, options.port, ssl_context)
    try:
        await server.start()
    except BaseException:
        reader.close()
        tokens.close()
        raise
    scheme = "http" if ssl_context is None else "https"
    shown = f"[{options.host}]" if ":" in options.host else options.host
    return RunningApi(f"{scheme}://{shown}:{server.port}/v1", print_fingerprint, server,
                      reader, tokens)


async def _serve(ctx: AppContext, store: Store, options: ServeOptions,
                 providers: ProviderRegistry) -> int:
    engine = Engine(store, config=options.engine, key_lookup=_key_lookup(),  # type: ignore[arg-type]
                    providers=providers)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    report = await engine.start(paused=options.paused)
    ctx.print(report.summary())
    running: RunningApi | None = None
    try:
        running = await start_api(ctx, engine, options)
        if running.fingerprint is not None:
            ctx.print(f"TLS certificate fingerprint (SHA-256) {running.fingerprint}")
        ctx.print(f"Serving {running.url} (Ctrl+C stops)")
        await stop.wait()
    finally:
        if running is not None:
            await running.stop()
        await engine.stop()
        engine.close_store()
    ctx.print("Stopped; renders in flight are reattached the next time ReelQueue starts.")
    return 0
