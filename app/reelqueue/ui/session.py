"""The window's session: what only the window has around the application layer's
:class:`~reelqueue.application.session.Session` (its settings, the clean-exit marker, the
recovery banner's follow-up, serving the HTTP API from the window). No Qt here, no journal,
and no forwarding layer (issue 36 item 5): the window's parts call the application layer
themselves with the application session, ``session.app`` -- ``jobs.cancel(session.app,
ids)``, ``session.app.spawn(coro)`` -- and tests/test_window_forwards.py fails on a
function here that only hands one call on.

Shutdown order (PRODUCT.md, qasync): the application session's (stop handing out work ->
cancel our tasks -> stop the engine -> close the journal and release the data-folder lock
-> stop the built-in mock), then the clean-exit marker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from reelqueue.application import team, views
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.builtin_mock import BuiltinMock
from reelqueue.application.context import AppContext
from reelqueue.application.events import JobEvent
from reelqueue.application.imports import ImportOptions
from reelqueue.application.providers import ProviderRegistry
from reelqueue.application.remote import ApiStarter, ServedApi
from reelqueue.application.serving import ServeOptions, parse_listen
from reelqueue.application.session import KeyCache, Session
from reelqueue.application.words import job_state_words
from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import KnownError
from reelqueue.domain.models import RecoveryReport
from reelqueue.domain.states import JobState
from reelqueue.ui.settings import SessionMarker, Settings, read_marker, write_marker

log = logging.getLogger(__name__)

__all__ = ["AccountDraft", "KeyCache", "OpenReport", "RecoveryFollowUp", "WindowSession"]


@dataclass(frozen=True)
class OpenReport:
    """How the session started.

    Attributes:
        unclean: the last run did not end cleanly (crash, kill, power cut).
        kept_renders: renders the user kept running at the last clean close.
        paused: the queue started paused (the user's choice, or after a crash).
        recovery: what start-up recovery did.
        keyring_problems: why some keys could not be read.
    """

    unclean: bool
    kept_renders: int
    paused: bool
    recovery: RecoveryReport
    keyring_problems: list[str] = field(default_factory=list)


PICKED_UP = "picked_up"
NEVER_ARRIVED = "never_arrived"
RENDER_AGAIN = "render_again"
FAILED = "failed"
CANCELLED = "cancelled"
# The words a resumed attempt says before the provider answered (engine/render.py).
NOT_YET_ANSWERED = frozenset({"reattached", "submitted"})
FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "PARKED"})


class RecoveryFollowUp:
    """What became of the renders recovery handed back (reattached, or submissions to
    reconcile), per job, from the first answer of the provider: the window words its
    recovery banner from this, after it happened, never ahead (issue 13).

    Attributes:
        jobs: the job ids followed. outcomes: job id -> PICKED_UP (the provider answered
            the poll: the render goes on), NEVER_ARRIVED (the submission never reached the
            provider: sent now, nothing charged), RENDER_AGAIN (the provider no longer has
            the render: it is created again), FAILED or CANCELLED.
        on_builtin: job id -> True when its account is on the built-in mock (which stops
            with ReelQueue, so its renders never survive).
        ended: job id -> the final state (COMPLETED, FAILED, CANCELLED, PARKED) of a render
            that was picked up, once it ends: "the renders picked up go on" stops being
            true then (issue 23).
    """

    def __init__(self, report: RecoveryReport, builtin_accounts: Iterable[str] = ()) -> None:
        self.report = report
        self.jobs = frozenset(report.reattached) | frozenset(report.reconcile)
        self.builtin_accounts = frozenset(builtin_accounts)
        self.outcomes: dict[int, str] = {}
        self.on_builtin: dict[int, bool] = {}
        self.ended: dict[int, str] = {}

    @property
    def settled(self) -> bool:
        return len(self.outcomes) == len(self.jobs)

    def observe(self, event: JobEvent) -> bool:
        """Take one job event; True when it settled a followed job's outcome."""
        job = event.job_id
        if job not in self.jobs or job in self.ended:
            return False
        if job in self.outcomes:
            if self.outcomes[job] == PICKED_UP and event.state in FINAL_STATES:
                self.ended[job] = event.state
                return True
            return False
        state = event.state
        answered = event.sub_status not in NOT_YET_ANSWERED or event.progress is not None
        if state in ("DOWNLOADING", "COMPLETED") or (state == "RENDERING" and answered):
            outcome = PICKED_UP
        elif state in ("QUEUED", "RETRY_WAIT"):
            outcome = (NEVER_ARRIVED if "never reached the provider"
                       in (event.error_message or "") else RENDER_AGAIN)
        elif state == "CLAIMED" and "never reached the provider" in (event.error_message or ""):
            outcome = NEVER_ARRIVED  # proven absent: created once, on the same claim
        elif state in ("FAILED", "PARKED"):
            outcome = FAILED
        elif state == "CANCELLED":
            outcome = CANCELLED
        else:
            return False
        self.outcomes[job] = outcome
        self.on_builtin[job] = event.account in self.builtin_accounts
        if outcome == PICKED_UP and state in FINAL_STATES:
            self.ended[job] = state
        return True

    def picked_up_going_on(self) -> int:
        """Renders picked up again that have not ended yet."""
        return sum(1 for job, o in self.outcomes.items()
                   if o == PICKED_UP and job not in self.ended)

    def count(self, outcome: str, builtin: bool | None = None) -> int:
        return sum(1 for job, o in self.outcomes.items()
                   if o == outcome and (builtin is None or self.on_builtin[job] == builtin))

    def text(self) -> str:
        """What happened so far, in the user's words (counts via ui/format)."""
        from reelqueue.ui import format as fmt

        if not self.jobs:
            return ""
        parts: list[str] = []
        picked = self.count(PICKED_UP)
        if picked:
            parts.append(f"{fmt.count(picked, 'render')} picked up again")
        gone_builtin = self.count(RENDER_AGAIN, builtin=True)
        gone_real = self.count(RENDER_AGAIN, builtin=False)
        if gone_real:
            parts.append(f"{fmt.number(gone_real)} could not be found at the provider and "
                         "will be rendered again")
        if gone_builtin:
            parts.append(f"{fmt.count(gone_builtin, 'render')} ran on the built-in mock, "
                         "which stops with ReelQueue: those renders are gone and will be "
                         "rendered again (the mock is not a real provider: nothing is charged; "
                         "its dollar figures are practice prices)")
        never = self.count(NEVER_ARRIVED)
        if never:
            parts.append(f"{fmt.count(never, 'submission')} never reached the provider and "
                         f"{fmt.plural(never, 'is', 'are')} sent now (nothing was charged)")
        failed = self.count(FAILED)
        if failed:
            parts.append(f"{fmt.number(failed)} failed (see the job details)")
        cancelled = self.count(CANCELLED)
        if cancelled:
            parts.append(f"{fmt.number(cancelled)} {job_state_words(JobState.CANCELLED).name}")
        waiting = len(self.jobs) - len(self.outcomes)
        if waiting:
            parts.append(f"{fmt.count(waiting, 'render')} still being checked with the "
                         "provider…")
        return ", ".join(parts) + ("" if waiting else ".")

    def facts(self) -> str:
        """The rest of the recovery report (already done when it is read)."""
        rest = replace(self.report, reattached=[], reconcile=[])
        return rest.summary().removeprefix("Recovery: ") if rest.touched else ""


class Spawn(Protocol):
    """Runs a coroutine as a task of the application session
    (:meth:`reelqueue.application.session.Session.spawn`, through the controller): what the
    window's parts are given to start their commands with."""

    def __call__(self, coro: Coroutine[Any, Any, Any], name: str = "ui-command"
                 ) -> asyncio.Task[Any]: ...


class WindowSession:
    """The window's side of an :class:`~reelqueue.application.session.Session`: opening
    and closing it with the window's settings and clean-exit marker, the import options
    from the settings, and the HTTP API the window serves. Commands are not here: the
    window calls :mod:`reelqueue.application` with :attr:`app` (which wakes the pump).

    Attributes:
        ctx: the folders and the clock.
        settings: the settings in force.
        app: the application session (the journal, the engine and its event bus, keys,
            built-in mock, the providers, spawn and the error sink): what the window's
            parts pass to the application layer's functions.
        closed: the session closed (or never opened: the window sets it then).
        api_starter: serves the HTTP API on this session (given by the entry module;
            None: this window cannot serve it).
        api: the HTTP API while the window serves it, else None.
        api_error: why the last attempt to serve it failed (None: it did not fail).
    """

    def __init__(self, ctx: AppContext, settings: Settings, *, keys: KeyCache | None = None,
                 mock: BuiltinMock | None = None, clock: Clock | None = None,
                 providers: ProviderRegistry | None = None,
                 api_starter: ApiStarter | None = None) -> None:
        self.ctx = ctx
        self.settings = settings
        self.app = Session(ctx, keys=keys, mock=mock, clock=clock, providers=providers)
        self.closed = False
        self._opened = False
        self.api_starter = api_starter
        self.api: ServedApi | None = None
        self.api_error: str | None = None
        self._api_options: ServeOptions | None = None

    # -- open ----------------------------------------------------------------------------
    async def open(self, *, start: bool) -> OpenReport:
        """Open the journal, read keys, recover, then start the pump (maybe paused)."""
        await self.app.open_journal()
        self._opened = True
        marker = await asyncio.to_thread(read_marker, self.ctx.data_dir)
        in_flight = await views.in_flight_count(self.app)
        kept = marker.kept_renders if not marker.running else 0
        unclean = marker.running or (in_flight > 0 and kept == 0)
        paused = not start or (unclean and self.settings.start_paused_after_crash)
        await asyncio.to_thread(write_marker, self.ctx.data_dir, SessionMarker(running=True))
        config = self.settings.engine_config()
        if team.is_team_session(self.app):  # machines share the queue: expired leases only
            config = team.team_config(config)
        report = await self.app.start(config, paused=paused)
        if team.is_team_session(self.app):
            await team.join(self.app)  # listed in the instances registry
        return OpenReport(unclean=unclean and report.touched > 0, kept_renders=kept,
                          paused=paused, recovery=report,
                          keyring_problems=list(self.app.keyring_problems))

    # -- close ---------------------------------------------------------------------------
    async def close(self, *, keep_renders: bool = True) -> int:
        """Shut down in order, then write the clean-exit marker; return how many renders
        were kept for next time."""
        if self.closed:
            return 0
        self.closed = True
        await self.stop_api()
        if team.is_team_session(self.app) and self.app.live_engine is not None:
            try:
                await team.leave(self.app)
            except Exception:  # the database is gone: its heartbeat simply stops
                log.warning("could not say goodbye in the instances registry", exc_info=True)
        kept = await self.app.stop(keep_renders=keep_renders)
        if self._opened:
            await asyncio.to_thread(write_marker, self.ctx.data_dir,
                                    SessionMarker(running=False, kept_renders=kept))
        return kept

    # -- the HTTP API --------------------------------------------------------------------
    def api_options(self) -> ServeOptions:
        """The API's options from the settings (always TLS: a self-signed certificate in
        the data folder unless the address is served otherwise)."""
        host, port = parse_listen(self.settings.api_listen)
        return ServeOptions(host=host, port=port, tls=True,
                            max_waiting=self.settings.api_max_waiting)

    async def apply_api(self) -> None:
        """Serve the HTTP API, or stop it, as the settings say (restarted when its address
        or queue limit changed). A failure (the port is taken, no engine runs) is kept in
        :attr:`api_error`, not raised."""
        wanted = self.settings.serve_api and not self.closed
        options = self.api_options() if wanted else None
        if self.api is not None and options != self._api_options:
            await self.stop_api()
        if options is None:
            self.api_error = None
            return
        if self.api is not None:
            return
        if self.api_starter is None:
            self.api_error = "This installation cannot serve the HTTP API."
            return
        try:
            self.api = await self.api_starter(self.ctx, self.app, options)
        except (OSError, KnownError, RuntimeError) as exc:
            log.warning("the HTTP API could not be served: %s", exc)
            self.api_error = str(exc) or type(exc).__name__
            return
        self._api_options = options
        self.api_error = None

    async def stop_api(self) -> None:
        api, self.api = self.api, None
        self._api_options = None
        if api is not None:
            await api.stop()

    def api_status(self) -> str:
        """What the window says about the HTTP API, truthfully."""
        if self.api is not None:
            text = f"Serving {self.api.url}"
            if self.api.fingerprint is not None:
                text += f" - certificate fingerprint (SHA-256, pin it) {self.api.fingerprint}"
            return text
        if self.api_error is not None:
            return f"Not serving: {self.api_error}"
        return "Not serving."

    # -- import and export ---------------------------------------------------------------
    def import_options(self, **overrides: Any) -> ImportOptions:
        root = Path(self.settings.output_dir) if self.settings.output_dir else self.ctx.videos_dir
        values: dict[str, Any] = {"output_root": root,
                                  "filename_template": self.settings.filename_template,
                                  "max_attempts": self.settings.max_attempts}
        values.update(overrides)
        return ImportOptions(**values)
