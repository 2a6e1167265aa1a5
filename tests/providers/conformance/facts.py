"""What the conformance suite needs to know about one adapter: :class:`AdapterFacts`.

Each provider's module here builds its fake (answers from the official fixtures under
``tests/fixtures/<provider>/``) and one ``FACTS`` table; test_suite.py runs every common
behaviour over all of them, and the per-adapter test files keep only what is particular.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY

from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import LostCreateSearch, RenderRequest

Answer = Callable[[], httpx2.Response]
# (HTTP status, fixture name or the body itself, headers, class, label, retry_after,
#  body_maybe_sent)
CreateError = tuple[int, Any, Mapping[str, str], ErrorClass, ErrorLabel, float | None, bool]


@dataclass(frozen=True)
class EngineFacts:
    """One row through the real engine, answers scripted at the fake.

    Attributes:
        account, prompt: the account the row runs on and its prompt.
        permanent: (method, route, answer, label, words): a documented permanent failure,
            one create and the row FAILED with ``label`` and ``words`` in its message.
        credits: (answer to every create, words in the account's status detail or "").
        retryable: (method, route, answer): documented retryable failures, each rendered
            again.
        unknown_create: a 2xx create answer without a usable id (None: the adapter finds
            the render again, its own test shows how).
        settings, params: the account's settings and the row's parameters.
        no_file: (route, answer, words in the failure) of a finished render that has no
            file, or None.
    """

    account: str
    prompt: str
    permanent: tuple[tuple[str, str, Answer, ErrorLabel, str], ...]
    credits: tuple[Answer, str]
    retryable: tuple[tuple[str, str, Answer], ...]
    unknown_create: Answer | None
    no_file: tuple[str, Answer, str] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PollShape:
    """For the poll-answer property: the documented state words, the field names random
    answers are built from, the field holding the state and the words that end a render."""

    states: tuple[str, ...]
    keys: tuple[str, ...]
    state_key: str
    ending: tuple[str, ...]


@dataclass(frozen=True)
class AdapterFacts:
    """Attributes:
    kind: the registry's kind; provider: the fixtures folder; label: the test id (one
        provider may bring a table per API).
    fake: ``fake(states)`` builds the provider fake (``.router``, ``.creates()``); each
        GET of the job moves it one fixture further along ``states``.
    make: the adapter on a client (key ``SENTINEL_KEY``); request: a render request.
    create, created: the create route and its success status.
    poll: the route of the polled job; job_id: its id (or ``job_id(fake)`` for a fake that
        knows only jobs it created).
    video: the route of the host that serves the video (no key goes there).
    states: (fixture, phase, sub_status or None): every documented state of a render.
    finished: the fixture of a finished render with its file.
    failures: (fixture, class, label): every documented failed state; failure_words:
        fixture -> the provider's reason, shown in the error.
    failed_answers: (poll answer, class, label, words): failed renders whose reason (a
        text, a code, an undocumented one) goes through the failure rules.
    create_errors: documented error answers to a create and how they are classified.
    refusal_in_200_status: the status a refusal inside an HTTP 200 carries (None: none).
    error_words: ``error_words(body)``: the provider's words of a create error body,
        shown in the error's text (None: not checked).
    retry_after: the create route honours a Retry-After header on a 429.
    no_id, unreadable: 2xx create answers with no usable id / that are not JSON objects;
        unreadable_as: the (class, label) of the latter (the body may have been sent;
        None: a table that does not say, an older plug-in's, is checked for that only).
    page_5xx_maybe_sent: a bare 500/502/503 page (not the provider's error body) to a
        create leaves its outcome open (a 504 always does).
    no_state: poll answers (JSON objects) that say nothing readable about the state.
    id_key: the create answer's id field (for the property); poll_shape: see PollShape.
    create_keys: more field names the create property builds random answers from;
        envelope: wraps a random value as an otherwise well-formed answer (None: none);
        refusal: ``refusal(body)``: None when a JSON object is not the provider's refusal,
        else whether a create refused so may still have gone through; unknown_as: the
        (class, label) of any other JSON object without an id, for an adapter that looks
        a lost create up (the others: always permanent, submit outcome unknown).
    no_file: finished poll answers (JSON) without the file.
    expire: makes the link in ``status`` dead once (``expire(fake, status)``).
    refresh: route -> how many GETs it has had once a poll and a download whose link
        was dead are done (the fresh link is read again once).
    check_key: (route read, answer refusing the key, or None).
    gone: (states, ``gone(fake)``, words): a finished render (polled along ``states``)
        whose file the provider then deletes for good, and the words of the failure.
    lost_create: how a create whose answer was lost is found.
    cancel: (method, route) the adapter cancels with, or None.
    key_header: the header that carries the key; echo_statuses: statuses echoed back.
    base_url: the account's base URL (None: the provider's default); key: its key.
    """

    kind: str
    provider: str
    fake: Callable[..., Any]
    make: Callable[[httpx2.AsyncClient], Any]
    request: Callable[..., RenderRequest]
    create: str
    created: int
    poll: str
    job_id: str | Callable[[Any], str]
    video: str
    states: tuple[tuple[str, RemotePhase, str | None], ...]
    finished: str
    failures: tuple[tuple[str, ErrorClass, ErrorLabel], ...]
    create_errors: tuple[CreateError, ...]
    no_id: tuple[Any, ...]
    unreadable: tuple[bytes, ...]
    id_key: str
    expire: Callable[[Any, Any], None]
    refresh: Mapping[str, int]
    check_key: tuple[str, Answer | None]
    engine: EngineFacts
    lost_create: LostCreateSearch = LostCreateSearch.NONE
    label: str = ""
    retry_after: bool = True
    error_words: Callable[[Any], str] | None = None
    refusal_in_200_status: int | None = None
    unreadable_as: tuple[ErrorClass, ErrorLabel] | None = None
    page_5xx_maybe_sent: bool = False
    no_state: tuple[Any, ...] = ()
    failed_answers: tuple[tuple[Any, ErrorClass, ErrorLabel, str], ...] = ()
    failure_words: Mapping[str, str] = field(default_factory=dict)
    no_file: tuple[Any, ...] = ()
    poll_shape: PollShape | None = None
    create_keys: tuple[str, ...] = ()
    unknown_as: tuple[ErrorClass, ErrorLabel] | None = None
    envelope: Callable[[Any], Any] | None = None
    refusal: Callable[[dict[str, Any]], bool | None] = field(default=lambda body: None)
    cancel: tuple[str, str] | None = None
    gone: tuple[tuple[str, ...], Callable[[Any], None], str] | None = None
    key_header: str = "authorization"
    echo_statuses: tuple[int, ...] = (400, 401, 429, 500)
    base_url: str | None = None
    key: str = SENTINEL_KEY
    reads_as: Callable[[dict[str, Any], str], bool] = field(
        default=lambda body, job_id: True)

    def __str__(self) -> str:
        return self.label or self.kind

    def job(self, fake: Any) -> str:
        return self.job_id if isinstance(self.job_id, str) else self.job_id(fake)


RETRYABLE_UNREADABLE = (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)


def expire_flag(fake: Any, status: Any) -> None:
    """For fakes whose next download answers as an expired link once."""
    fake.expire_next_download = True


def gone_flag(fake: Any) -> None:
    """For fakes whose next download answers as a deleted file (states say the rest)."""
    fake.expire_next_download = True


def expire_url(fake: Any, status: Any) -> None:
    """For fakes that re-sign the link on every read: this link is dead from now on."""
    fake.expired.add(status.video_url)


@dataclass(frozen=True)
class SearchFacts:
    """An adapter's search of the account's renders (reconcile by search), for
    conformance/test_search.py.

    Attributes:
        label: the test id; provider: the fixtures folder.
        listing: ``listing(n)`` builds a fake account (``.router``) listing ``n`` renders,
            all created inside ``window`` and already listed.
        make: ``make(client, fake)``: the adapter on a client to that fake.
        route: the list's route; window: (since, until) of the searches.
        page, budget: renders one page holds, pages one search reads at most.
        hosts: the provider's own hosts (the only ones a search may call), and the
            ``authorization`` header each of its calls carries.
        first_errors: (status, fixture or the body itself, class, label) of a refused
            first page.
        failures: answers to the second page that leave the search incomplete
            (``failure()`` gives what ``Router.script`` takes).
        unreadable: HTTP 200 page bodies that cannot be read.
        off: ``(make_off, route)``: an account whose host has no list, and that route.
        off_statuses: the statuses such a host answers the list with; off_label: the
            label of the error the search raises then (None: any; the engine takes any
            error of a search as "unknown"); off_midway: such an answer to a later page
            turns search off too (an error, not an incomplete search); off_words: words
            of that error.
        settle, keeps_hours: the adapter's declared settle time and how long the provider
            keeps a render's echo (None: for ever).
    """

    label: str
    provider: str
    listing: Callable[[int], Any]
    make: Callable[[httpx2.AsyncClient, Any], Any]
    route: str
    window: tuple[float, float]
    page: int
    budget: int
    hosts: tuple[str, ...]
    first_errors: tuple[tuple[int, Any, ErrorClass, ErrorLabel], ...]
    failures: tuple[Callable[[], Any], ...]
    unreadable: tuple[bytes, ...]
    off: tuple[Callable[[httpx2.AsyncClient], Any], str]
    off_statuses: tuple[int, ...] = (404, 405)
    off_label: ErrorLabel | None = ErrorLabel.SUBMIT_UNKNOWN
    off_midway: bool = False
    off_words: str = ""
    settle: float = 0.0
    keeps_hours: float | None = None
    authorization: str = f"Bearer {SENTINEL_KEY}"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class ListPollFacts:
    """An adapter's ``poll_many`` (one list read answers many renders, issue 33 item 3),
    for conformance/test_list_poll.py.

    Attributes:
        label: the test id; provider: the fixtures folder; page: the fixture of one list
            page (no more pages), copied from the provider's reference; items: the page's
            field holding the listed renders.
        make: the adapter on a client (key ``SENTINEL_KEY``).
        route: the list's route; poll: ``poll(id)``, the route of one render's poll.
        phases: id -> the phase the page says each render is in.
        more: ``more(page)``: the page saying more follow (a cursor), for the page budget.
        budget: list pages one call reads at most.
        errors: (status, body, class, label) of a refused list read.
        unreadable: HTTP 200 bodies that are no page of renders.
        bad_items: ``bad(item)`` edits a listed item so it cannot be read as a render.
        off: (status, body) of a host without the list: list polling stops.
        poll_answer: ``poll_answer(item)``, the body the render's own poll gets for a
            listed item (the item itself, or MiniMax V2's ``{"task": item}``).
        render_id: ``render_id(id)``, the render's job id for a listed item's id (the id
            itself, or MiniMax's ``v2:<id>``).
    """

    label: str
    provider: str
    page: str
    items: str
    make: Callable[[httpx2.AsyncClient], Any]
    route: str
    poll: Callable[[str], str]
    phases: Mapping[str, RemotePhase]
    more: Callable[[dict[str, Any]], dict[str, Any]]
    budget: int
    errors: tuple[tuple[int, Any, ErrorClass, ErrorLabel], ...]
    unreadable: tuple[bytes, ...]
    bad_items: tuple[Callable[[dict[str, Any]], None], ...]
    off: tuple[int, Any]
    poll_answer: Callable[[dict[str, Any]], Any] = lambda item: item
    render_id: Callable[[str], str] = lambda item_id: item_id

    def __str__(self) -> str:
        return self.label
