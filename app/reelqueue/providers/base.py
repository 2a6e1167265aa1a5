"""The interface every provider adapter implements, and what it exchanges with the engine.

An adapter is built per account by ``create(session, config)``
(:class:`~reelqueue.providers.http.HttpSession`); it never retries a create
request whose body may have been sent (no provider has an idempotency key), it converts
every foreign exception into :class:`~reelqueue.domain.errors.ProviderError` with an
:class:`ErrorClass` and an :class:`ErrorLabel`, and it never puts the API key into an
exception text, a log line or a ``repr``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

# Re-exported: the account view's values live in domain/ because the journal keeps them.
from reelqueue.domain.account_view import AccountView as AccountView
from reelqueue.domain.account_view import Balance as Balance
from reelqueue.domain.account_view import Charging as Charging
from reelqueue.domain.account_view import ModelLimit as ModelLimit
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError, bounded_retry_after
from reelqueue.domain.spend_reconcile import UsageReport as UsageReport
from reelqueue.domain.states import RemotePhase

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class RenderRequest:
    """Attributes:
    job_key: our stable job identity (sent as metadata where the provider keeps it).
    client_token: unique per submission; committed before the create request.
    prompt: the prompt text.
    params: model, duration, aspect_ratio, resolution, seed, negative_prompt, image...
    """

    job_key: str
    client_token: str
    prompt: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoteStatus:
    """A provider's answer to a poll, normalised.

    Attributes:
        phase: queued / running / succeeded / failed / cancelled.
        sub_status: the provider's own state word (e.g. Runway's THROTTLED).
        progress: 0..1 when the provider gives a number, else None.
        video_url: where the finished video is, when succeeded.
        error: the failure, when failed.
        cost: what the provider says it charged, if it says.
        poll_after: seconds the provider suggests before the next poll.
    """

    phase: RemotePhase
    sub_status: str = ""
    progress: float | None = None
    video_url: str | None = None
    error: ProviderError | None = None
    cost: float | None = None
    poll_after: float | None = None

    def __post_init__(self) -> None:
        # Whatever an adapter (a plug-in's too) read from an answer, the engine acts on
        # sane numbers: progress in 0..1, a cost that is a finite amount >= 0, a poll
        # hint of at most MAX_POLL_AFTER_SECONDS; anything else is "not given".
        progress, cost, hint = (_finite(v) for v in (self.progress, self.cost,
                                                    self.poll_after))
        object.__setattr__(self, "progress",
                           None if progress is None else min(1.0, max(0.0, progress)))
        object.__setattr__(self, "cost", None if cost is None or cost < 0 else cost)
        object.__setattr__(self, "poll_after",
                           None if hint is None else min(MAX_POLL_AFTER_SECONDS,
                                                         max(0.0, hint)))
        # The provider's own state word is shown and written to the journal at each
        # change: a word, not a document (an unknown state is passed on as it came).
        said: object = self.sub_status  # typed str; a plug-in may pass anything
        if not isinstance(said, str):
            object.__setattr__(self, "sub_status", "")
        elif len(said) > MAX_SUB_STATUS_CHARS or not said.isprintable():
            word = "".join(c if c.isprintable() else " " for c in said[:MAX_SUB_STATUS_CHARS])
            object.__setattr__(self, "sub_status", word + (
                "…" if len(said) > MAX_SUB_STATUS_CHARS else ""))


MAX_RENDER_ID_CHARS = 1024
"""The longest render id a provider's answer can name that ReelQueue keeps (ids are tens of
characters: a Veo operation's name, the longest, about a hundred)."""


def render_id_problem(value: object) -> str | None:
    """Why ``value`` (what an adapter, a plug-in's too, read as a create's render id) cannot
    be kept and polled, or None. Such an answer named no usable render: the create's
    outcome is unknown, never a render id that every poll, ledger row and listing carries."""
    if not isinstance(value, str) or not value:
        return f"the provider's answer gave no render id ({type(value).__name__})"
    if len(value) > MAX_RENDER_ID_CHARS:
        return (f"the provider's answer gave a render id of {len(value):,} characters "
                f"(at most {MAX_RENDER_ID_CHARS:,} are kept)")
    if not value.isprintable() or value != value.strip():
        return "the provider's answer gave a render id with control characters or spaces"
    return None


MAX_POLL_AFTER_SECONDS = 600.0
"""The longest wait between two polls a provider's hint can ask for (ten minutes)."""

MAX_SUB_STATUS_CHARS = 80
"""The most of a provider's state word kept (its documented words are a dozen characters)."""


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class ProviderConfig:
    """What an adapter is built from. ``api_key`` is never logged or shown."""

    account: str
    base_url: str | None
    api_key: str | None = field(repr=False)
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PriceVariant:
    """A model's price under some conditions; a condition left None holds for any value.

    Attributes:
        usd_per_second: USD per second of video.
        resolution: the row's resolution it applies to ("1080p"; compared case-blind).
        audio: True: the row asks for audio; False: the row says no audio; None: either.
        seconds: the clip length it applies to (a provider that prices whole clips).
    """

    usd_per_second: float
    resolution: str | None = None
    audio: bool | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class ParamSpec:
    """What a provider accepts, declared by its adapter for validation before import.

    Attributes:
        models: accepted model ids; the first is the default.
        durations: accepted durations in seconds (None: any in duration_range).
        duration_range: (min, max) seconds when durations is None.
        aspect_ratios: accepted aspect ratios ("16:9", ...).
        resolutions: accepted resolutions ("720p", ...), empty if not settable.
        seed: whether a seed is accepted.
        negative_prompt: whether a negative prompt is accepted.
        reference_image: whether a first-frame / reference image is accepted.
        max_prompt_chars: the longest prompt accepted.
        min_prompt_chars: the shortest prompt accepted (ignoring surrounding spaces).
        price_per_second: model -> USD per second of video at the model's default
            resolution, duration and audio (estimates only).
        price_variants: model -> its prices under other conditions (resolution, audio,
            clip length); the most specific one that fits a row wins, else
            ``price_per_second`` (intake/estimate.py ``table_price``). A model with
            variants but no ``price_per_second`` is priced only where a variant fits, and
            is "price unknown" elsewhere (a provider that lists whole clips only).
        price_source: where the prices come from, and when they were read.
        charging: when the provider takes a render's price from the balance, its unit and
            what a unit is worth in USD (issue 32 item 4; ``unknown``, no unit: the
            balance gates nothing).
        unit_price_per_second: model -> the provider's own price per second in
            ``charging.unit`` where it publishes one (Runway: credits per second).
    """

    models: tuple[str, ...] = ()
    durations: tuple[float, ...] | None = None
    duration_range: tuple[float, float] = (1.0, 60.0)
    aspect_ratios: tuple[str, ...] = ()
    resolutions: tuple[str, ...] = ()
    seed: bool = False
    negative_prompt: bool = False
    reference_image: bool = False
    max_prompt_chars: int = 4000
    min_prompt_chars: int = 1
    price_per_second: Mapping[str, float] = field(default_factory=dict)
    price_variants: Mapping[str, tuple[PriceVariant, ...]] = field(default_factory=dict)
    price_source: str = ""
    default_capacity: int = 1
    charging: Charging = field(default_factory=Charging)
    unit_price_per_second: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ParamProblem:
    """One thing a provider's rules refuse in a row's parameters (beyond its ParamSpec).

    Attributes:
        message: what is wrong, in words a user understands.
        fields: the parameters concerned ("model", "duration", "aspect_ratio",
            "resolution", "seed", "negative_prompt", "image").
        accepted: field -> the values that would fix the problem on their own, best first
            (None: leaving the field empty); a concerned field may offer none.
    """

    message: str
    fields: tuple[str, ...]
    accepted: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, message: str, **accepted: Iterable[Any]) -> ParamProblem:
        """``ParamProblem.of("Veo renders 1080p only at 8 seconds", duration=[8],
        resolution=["720p"])``: the keywords are the fields concerned, in order."""
        values = {name: tuple(choices) for name, choices in accepted.items()}
        return cls(message, tuple(values), values)

    def __str__(self) -> str:
        return self.message


class ReconcileMethod(StrEnum):
    """How a create whose answer was lost is found again (DESIGN.md invariant 13).

    KEY: a lookup by our client token, which the provider keeps (Kling's
        ``external_task_id``, the built-in mock).
    SEARCH: a search of the account's renders, listed by the provider with what it echoes
        of each create (prompt, model, duration...) and its creation time.
    NONE: the provider cannot be asked; an unknown create stays unknown for the user.
    """

    KEY = "key"
    SEARCH = "search"
    NONE = "none"


@dataclass(frozen=True)
class RemoteRecord:
    """One render of the account as the provider lists it.

    Attributes:
        provider_job_id: the provider's id of the render.
        created_at: when the provider created it (Unix seconds, the provider's clock);
            None when the record does not say (such a record can never be ruled out).
        status: the provider's own state word, shown to the user among candidates.
        echo: what the provider echoes of the create, normalised by the adapter exactly as
            :meth:`SearchableProvider.echo` normalises a request; None when the record
            cannot be compared (its inputs were removed, or a field is unreadable).
    """

    provider_job_id: str
    created_at: float | None
    status: str
    echo: Mapping[str, Any] | None


@dataclass(frozen=True)
class SearchResult:
    """The account's renders created from ``since`` on, newest or oldest first.

    Attributes:
        records: every render read (the adapter may return some outside the window).
        complete: True only when the listing provably covers everything created from
            ``since`` to the moment it was read: paging went past a record created before
            ``since``, or reached the end of the list. False (a page limit, a list that
            may omit renders still in flight) means "none found" can never be concluded.
    """

    records: tuple[RemoteRecord, ...]
    complete: bool


@runtime_checkable
class SearchableProvider(Protocol):
    """An adapter whose provider lists the account's renders with what it echoes.

    Attributes:
        supports_search: True when :meth:`search` works for this account (a gateway may
            not implement the list: then False, and nothing is concluded).
        settle_seconds: how long after a create the provider's list is assumed to show it
            (documented per provider in docs/providers.md); a list read earlier than that
            after the latest moment a create could have been sent proves nothing.
        echo_keeps_hours: how long the provider keeps what it echoes (Replicate removes
            API inputs after an hour); None: as long as the render is listed.
        proves_absence (optional, default True): False when the listing can find a
            render but never prove one absent (:class:`LostCreateSearch`).
    """

    supports_search: bool
    settle_seconds: float
    echo_keeps_hours: float | None

    async def search(self, since: float, until: float) -> SearchResult:
        """The account's renders created in [since, until] (Unix seconds, our clock; the
        caller has widened the window by a margin for clock offsets). Pages until a
        record older than ``since`` or the end of the list, within a page budget. An
        answer that cannot be read raises ``outcome_unknown`` (unknown is never "none")."""
        ...

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """What the provider would echo of ``request``, normalised as in
        :class:`RemoteRecord` (equal mappings mean the same prompt and parameters)."""
        ...


def reconcile_method(provider: object) -> ReconcileMethod:
    """How ``provider`` finds a create whose answer was lost."""
    if getattr(provider, "supports_lookup", False):
        return ReconcileMethod.KEY
    if isinstance(provider, SearchableProvider) and provider.supports_search:
        return ReconcileMethod.SEARCH
    return ReconcileMethod.NONE


class LostCreateSearch(StrEnum):
    """What a user can be promised about a create whose answer was lost, on one account
    (issue 32: the retry plan, ``resolve`` and their words ask the account's adapter).

    LOOKUP: found by our client token; "not found" proves it never arrived.
    SEARCH: the account's renders are listed; a complete listing proves it never arrived.
    SEARCH_FINDS_ONLY: the listing can find the render, never prove it absent (fal's
        request history lists finished requests only): not found, it stays unknown for the
        user, never created again without their word.
    NONE: the provider cannot be asked; nothing is looked for.
    """

    LOOKUP = "lookup"
    SEARCH = "search"
    SEARCH_FINDS_ONLY = "search_finds_only"
    NONE = "none"

    @property
    def looks(self) -> bool:
        """Something is looked for in the provider's records."""
        return self is not LostCreateSearch.NONE

    @property
    def proves_absence(self) -> bool:
        """"Not found" can prove the create never arrived (then it is created once)."""
        return self in (LostCreateSearch.LOOKUP, LostCreateSearch.SEARCH)


def lost_create_search(provider: object) -> LostCreateSearch:
    """How ``provider`` (an adapter built for one account) finds a create whose answer was
    lost: :func:`reconcile_method`, with whether its search can prove a render absent
    (``proves_absence``, True unless the adapter says otherwise)."""
    method = reconcile_method(provider)
    if method == ReconcileMethod.KEY:
        return LostCreateSearch.LOOKUP
    if method == ReconcileMethod.SEARCH:
        return (LostCreateSearch.SEARCH if getattr(provider, "proves_absence", True)
                else LostCreateSearch.SEARCH_FINDS_ONLY)
    return LostCreateSearch.NONE


def sends_client_token(provider: object) -> bool:
    """Whether the provider keeps our client token where a user can see it (a dashboard,
    its get or list answers): only then do the words for an unknown create name it."""
    return bool(getattr(provider, "keeps_client_token",
                        getattr(provider, "supports_lookup", False)))


@runtime_checkable
class AccountViewProvider(Protocol):
    """An adapter whose provider publishes the account's figures (issue 32 item 2): an
    optional capability; an adapter without it has them "not published".

    The dataclasses (:class:`AccountView`, :class:`Balance`, :class:`ModelLimit`) live in
    ``domain.account_view`` because the journal keeps them too; they are re-exported here.
    """

    async def account_view(self) -> AccountView:
        """Read the account's balance, per-model limits, usage and organization (the key
        check's own answer when it was just read, else one bounded GET). An error answer
        raises :class:`ProviderError` (a rate limit with its Retry-After); an answer that
        is readable but holds unusable figures returns them as None with ``problem``."""
        ...


def account_view_of(provider: object) -> AccountViewProvider | None:
    """``provider`` as an :class:`AccountViewProvider`, or None when it offers no view."""
    return provider if isinstance(provider, AccountViewProvider) else None


@runtime_checkable
class UsageProvider(Protocol):
    """An adapter whose provider publishes the account's usage per model and UTC day
    (issue 32 item 5, cost reconciliation): an optional capability; an adapter without it
    has its usage "not published"."""

    async def usage_report(self, start: date, end: date) -> UsageReport:
        """The usage from ``start`` to ``end`` (not included), at most
        ``domain.spend_reconcile.MAX_USAGE_DAYS`` days, one bounded read. An error answer
        raises :class:`ProviderError`; a readable answer with unusable figures returns a
        report with ``problem`` and no figure."""
        ...


def usage_of(provider: object) -> UsageProvider | None:
    """``provider`` as a :class:`UsageProvider`, or None when it publishes no usage."""
    return provider if isinstance(provider, UsageProvider) else None


@runtime_checkable
class ListPollProvider(Protocol):
    """An adapter whose provider lists the account's renders with each one's state and
    output (issue 33 item 3): an optional capability. The engine then polls the renders
    of an account that fall due together with ONE list call instead of one poll each; an
    adapter without it is polled one render at a time.

    Attributes (optional, read with ``getattr``):
        supports_poll_many: False when the account's list cannot be read (a gateway
            without it, a server that said so): the engine polls one by one. Default True.
        poll_many_limit: the most ids one call is asked for (default
            :data:`POLL_MANY_LIMIT`).
        lists_render: a method ``lists_render(provider_job_id) -> bool`` for an adapter
            whose list holds only some of its renders (MiniMax lists its V2 tasks, never
            its V1 ones): a render it answers False for is never gathered into a list
            call, only polled on its own. Default: every render is listed.
    """

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        """The state of each of ``provider_job_ids`` found in one bounded read of the
        account's list (one page, or a few within the adapter's page budget).

        Returns only the ids it found, each read by the SAME rules as :meth:`Provider.poll`
        (the same parser: a finished render without its file is SUCCEEDED with
        ``video_url=None`` unless the list never carries the file, then the item is left
        out; a failure's reason through the adapter's ``FailureRules``). An item that
        cannot be read is left out, never guessed: a missing id is polled on its own by
        the engine, never concluded gone. An answer that cannot be read as a list, or an
        error answer, raises :class:`ProviderError` as :meth:`Provider.poll` would."""
        ...


POLL_MANY_LIMIT = 100
"""The most ids one ``poll_many`` call is asked for when the adapter gives no limit."""


def list_poll_of(provider: object, provider_job_id: str | None = None
                 ) -> ListPollProvider | None:
    """``provider`` as a :class:`ListPollProvider`, or None when it offers no list poll
    (or says its account's list cannot be read now: ``supports_poll_many`` False), or,
    given a render, when its ``lists_render`` says that render is not in its list
    (anything but True counts as not listed: the render's own poll is always right). A
    ``lists_render`` that raises (a plug-in's bug) ends list polling for that adapter,
    said once in the log."""
    if not isinstance(provider, ListPollProvider):
        return None
    if getattr(provider, "supports_poll_many", True) is not True:
        return None
    lists = getattr(provider, "lists_render", None)
    if provider_job_id is not None and lists is not None:
        try:
            listed = callable(lists) and lists(provider_job_id) is True
        except Exception:  # a plug-in's bug: its renders are polled one by one from now
            log.warning("provider %r: lists_render failed; its renders are polled one by "
                        "one", provider, exc_info=True)
            with contextlib.suppress(Exception):
                provider.supports_poll_many = False  # type: ignore[attr-defined]
            listed = False
        if not listed:
            return None
    return provider


def poll_many_limit(provider: object) -> int:
    """The most ids one ``poll_many`` call of ``provider`` is asked for (at least 1)."""
    value = getattr(provider, "poll_many_limit", POLL_MANY_LIMIT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return POLL_MANY_LIMIT
    return min(value, 10 * POLL_MANY_LIMIT)


class Provider(Protocol):
    """One account's connection to one provider.

    Attributes:
        kind: the provider kind ("mock", "runway", ...).
        supports_lookup: True when :meth:`lookup` can find a submission by client token,
            so a crash inside the submit window can be reconciled instead of resubmitted.
    """

    kind: str
    supports_lookup: bool

    async def check_key(self) -> None:
        """Make the cheapest read-only call that proves the key works; raise if not."""
        ...

    async def submit(self, request: RenderRequest) -> str:
        """Send the create request once; return the provider's job id."""
        ...

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        """Fetch the job's current state.

        A render the provider reports finished is SUCCEEDED even when the answer lacks
        its file: return ``video_url=None`` then (never FAILED), so the engine reads it
        again and, failing that, fails the job without creating it again. A failed
        render's reason goes through the adapter's ``FailureRules``.
        """
        ...

    async def lookup(self, request: RenderRequest) -> str | None:
        """Find a submission made with ``request.client_token``.

        None only when a well-formed, documented answer says there is none. An answer
        that cannot be read raises ``outcome_unknown`` (adapters/_common.py): unknown is
        never "no", or the job would be created (and paid for) again.
        """
        ...

    def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        """Stream the finished video. Raises ProviderError (expired link, truncated...)."""
        ...

    async def cancel(self, provider_job_id: str) -> None:
        """Ask the provider to stop the render, where it can; otherwise do nothing."""
        ...


def parse_retry_after(value: str | None, default: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date), at most
    :data:`~reelqueue.domain.errors.MAX_RETRY_AFTER_SECONDS`; ``default`` for a value that
    is neither (``inf`` and ``nan`` included)."""
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return bounded_retry_after(seconds) if math.isfinite(seconds) else default
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    import time

    return bounded_retry_after(when.timestamp() - time.time())


def classify_http_status(
    status_code: int,
    message: str,
    *,
    retry_after: float | None = None,
    during_create: bool = False,
) -> ProviderError:
    """The default mapping of an HTTP status onto our three classes (PROVIDERS.md 6d).

    Adapters refine it with the provider's own error codes before falling back to this.
    ``message`` must not contain the key; adapters pass the provider's error text only.
    """
    if status_code in (401, 403):
        return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                             label=ErrorLabel.KEY_REJECTED, status_code=status_code)
    if status_code == 402:
        return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                             label=ErrorLabel.OUT_OF_CREDITS, status_code=status_code)
    if status_code == 429:
        return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                             label=ErrorLabel.RATE_LIMITED, retry_after=retry_after,
                             status_code=status_code)
    if status_code in (408, 504):
        return ProviderError(message, error_class=ErrorClass.RETRYABLE,
                             label=ErrorLabel.TIMED_OUT, status_code=status_code,
                             body_maybe_sent=during_create, retry_after=retry_after)
    if status_code >= 500:
        # A 5xx *response* to a create is a definite answer: the provider did not accept
        # the job, so resubmitting it is safe. Only a create with no answer at all
        # (transport_error) leaves the outcome unknown.
        return ProviderError(message, error_class=ErrorClass.RETRYABLE,
                             label=ErrorLabel.PROVIDER_ERROR, status_code=status_code,
                             body_maybe_sent=False, retry_after=retry_after)
    if status_code in (400, 404, 409, 413, 415, 422):
        return ProviderError(message, error_class=ErrorClass.PERMANENT,
                             label=ErrorLabel.INVALID_INPUT, status_code=status_code)
    return ProviderError(message, error_class=ErrorClass.RETRYABLE,
                         label=ErrorLabel.PROVIDER_ERROR, status_code=status_code)


def scrub_secret(text: str, secret: str | None, *, header_values: Iterable[str] = ()) -> str:
    """``text`` with every spelling of ``secret`` (raw, url-quoted, JSON-escaped, base64,
    the whole ``header_values`` that carried it, and any run of 8+ of its characters) shown
    as ``[redacted]``, then cut to a few hundred characters: what an adapter may put in an
    error text built from a provider's answer (a provider may echo the request back)."""
    from reelqueue.providers.adapters._redact import redact, secret_variants, shorten_text

    if secret:
        text = redact(text, secret_variants(secret, header_values))
    return shorten_text(text)
