"""The adapter for the local mock provider (:mod:`reelqueue.mockprovider`).

It speaks the mock's small JSON API over the shared ``httpx2.AsyncClient`` and maps every
failure onto :class:`~reelqueue.domain.errors.ProviderError`. It sends a create request
exactly once (no retries here), never sends the API key anywhere but the account's base
URL (download links get no key), and never puts the key into an error message or repr.
Its downloads and its scrubbing go through the same :class:`ApiClient` as the real
adapters: the same link checks (every redirect hop), byte cap and key scrub.

How a create whose answer was lost is found again is the account setting ``reconcile``
(docs/reconciliation/mock.md):

- ``"key"`` (default): a lookup by our client token (``GET /v1/renders?client_token=``),
  like Kling's ``external_task_id``;
- ``"search"``: no lookup; :meth:`MockProvider.search` pages the key's list of renders
  (``GET /v1/renders?created_after=&before=``, newest first) and the engine matches what
  it echoes (prompt and params, :meth:`MockProvider.echo`) and when, like the real
  providers without a client token. ``settle_seconds`` (default
  :data:`DEFAULT_SETTLE_SECONDS`) must be at least the server's ``--list-delay`` MAX;
- ``"none"``: neither; an unknown create stays unknown for the user.

The older boolean setting ``lookup`` still works: ``lookup: false`` (with no
``reconcile``) is ``"none"``, ``lookup: true`` is ``"key"``; ``reconcile`` wins over it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urljoin

import httpx2

from reelqueue.domain.account_view import DAILY_WINDOWS
from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._account import (
    MAX_VIEW_BYTES,
    Figures,
    another_organization,
    answer_json,
    mapping,
    read_at_of,
    scrubbed,
)
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import outcome_unknown
from reelqueue.providers.adapters._images import ImageInput, image_kind, load_image
from reelqueue.providers.base import (
    AccountView,
    ModelLimit,
    ParamSpec,
    ProviderConfig,
    ReconcileMethod,
    RemoteRecord,
    RemoteStatus,
    RenderRequest,
    SearchResult,
    classify_http_status,
    parse_retry_after,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo, check_base_url

KIND = "mock"
MODELS = ("mock-1", "mock-2")

_PHASES: dict[str, RemotePhase] = {phase.value: phase for phase in RemotePhase}

DEFAULT_SETTLE_SECONDS = 2.0
"""How long after a create a ``reconcile: search`` account trusts the list to show it,
unless the account sets ``settle_seconds``. The mock lists a render after a delay drawn
from ``--list-delay MIN MAX`` (default 0 0): 2 s covers the default with room for a busy
test machine; an account whose server lists later must set more."""

SEARCH_PAGE_BUDGET = 20
"""List pages read by one search before it gives up with ``complete=False``."""
MAX_LIST_PAGE = 100
"""The largest page the mock's list gives (its ``limit``)."""
POLL_MANY_PAGE_BUDGET = 3
"""List pages one :meth:`MockProvider.poll_many` reads at most: the renders in flight are
the newest, so a few pages of 100 hold them; one not found is polled on its own."""


def reconcile_mode(settings: Mapping[str, Any]) -> ReconcileMethod:
    """The account's ``reconcile`` setting ("key", "search", "none"); without it the old
    ``lookup`` boolean (false: "none")."""
    word = settings.get("reconcile")
    if word is None:
        return ReconcileMethod.KEY if bool(settings.get("lookup", True)) else (
            ReconcileMethod.NONE)
    try:
        return ReconcileMethod(str(word).strip().lower())
    except ValueError:
        raise InputError(f"The mock account's 'reconcile' setting must be key, search or "
                         f"none, not {str(word)[:40]!r}.") from None


DEFAULT_POLLS_PER_MINUTE = 12_000.0
"""The status reads per minute the mock publishes for one account (the engine spreads an
account's polls within it: engine/polling.py), unless the account sets
``polls_per_minute``: the mock's server on loopback answers far more; a real provider's
limit is lower (Replicate: 3,000 a minute)."""


def _polls_per_minute(settings: Mapping[str, Any]) -> float:
    value = settings.get("polls_per_minute", DEFAULT_POLLS_PER_MINUTE)
    number = _number(value)
    if number is None or number <= 0:
        raise InputError("The mock account's 'polls_per_minute' must be a number above 0.")
    return number


def _settle_seconds(settings: Mapping[str, Any]) -> float:
    value = settings.get("settle_seconds", DEFAULT_SETTLE_SECONDS)
    if _number(value) is None or value < 0:
        raise InputError("The mock account's 'settle_seconds' must be a number of seconds "
                         ">= 0.")
    return float(value)


ACCOUNT_VIEW_PATH = "/v1/account/view"
VIEW_UNITS = ("credits", "USD")
"""The balance units the mock's account view may name; any other is another currency."""


def mock_view(account: str, response: httpx2.Response, cut: bool,
              organization: Any = None) -> AccountView:
    """The account view of a ``GET /v1/account/view`` answer (mockprovider/handler.py)."""
    read_at = read_at_of(response)
    body, problem = answer_json(response, cut)
    figures = Figures()
    if body is None:
        figures.refuse(problem or "unreadable answer")
        return figures.view(account, None, [], None, read_at)
    org, other = figures.organization(body.get("organization_id"), organization)
    if other:
        assert org is not None
        return another_organization(account, org, str(organization), read_at)
    balance = None
    if "balance" not in body:
        figures.refuse("balance missing")
    else:
        given = mapping(body.get("balance"))
        unit = given.get("unit")
        balance = figures.balance(given.get("amount"), "balance",
                                  unit if unit in VIEW_UNITS else "credits",
                                  currency=unit, expected_currency=(
                                      unit if unit in VIEW_UNITS else "credits"))
    models = mapping(body.get("models"))
    limits: list[ModelLimit] = []
    for name in MODELS:
        if name not in models:
            continue
        entry = mapping(models[name])
        window = entry.get("daily_window")
        used = figures.count(entry.get("used_today"), f"{name} renders today",
                             required=False)
        limits.append(ModelLimit(
            name,
            concurrency=figures.count(entry.get("concurrency"), f"{name} concurrency"),
            daily=figures.count(entry.get("daily"), f"{name} daily limit"),
            daily_window=window if window in DAILY_WINDOWS else "unknown",
            used_today=figures.used_on_day(used, entry.get("day"), read_at, name)))
    return figures.view(account, balance, limits, org, read_at)


class MockProvider:
    """One account on a mock provider server.

    Attributes:
        kind: always ``"mock"``.
        reconcile: the account setting ``reconcile`` (or the old ``lookup``).
        supports_lookup: True in ``reconcile: key`` mode (the default).
        supports_search: True in ``reconcile: search`` mode (until the server says it has
            no list: 404 ``list_disabled``).
        settle_seconds: the account setting ``settle_seconds`` (default 2.0).
        polls_per_minute: the account setting ``polls_per_minute``
            (:data:`DEFAULT_POLLS_PER_MINUTE`): the budget its polls are spread within.
        echo_keeps_hours: None: the mock keeps prompt and params as long as the render.
        keeps_client_token: True only in ``key`` mode, the one where the token is how a
            render is found (the mock always receives it; in the other modes it stands
            for a provider that shows it nowhere).
        search_page_budget: list pages one search reads at most.
        supports_poll_many: True until the server says it has no list (404
            ``list_disabled``): then its renders are polled one by one.
        poll_many_limit: ids one :meth:`poll_many` is asked for at most.
        poll_many_page_budget: list pages one :meth:`poll_many` reads at most.
        account: the account name.
        base_url: the server, e.g. ``http://127.0.0.1:8765``.
    """

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        if not config.base_url:
            raise InputError(
                "The mock provider has no address: give the account a base URL such as "
                "http://127.0.0.1:8765 (printed by 'reelqueue mock-provider')."
            )
        self.kind = KIND
        self.reconcile = reconcile_mode(config.settings)
        self.supports_lookup = self.reconcile is ReconcileMethod.KEY
        self.supports_search = self.reconcile is ReconcileMethod.SEARCH
        self.settle_seconds = _settle_seconds(config.settings)
        self.polls_per_minute = _polls_per_minute(config.settings)
        self.echo_keeps_hours: float | None = None
        self.keeps_client_token = self.reconcile is ReconcileMethod.KEY
        self.search_page_budget = SEARCH_PAGE_BUDGET
        self.supports_poll_many = True
        self.poll_many_limit = POLL_MANY_PAGE_BUDGET * MAX_LIST_PAGE
        self.poll_many_page_budget = POLL_MANY_PAGE_BUDGET
        # The account's own render time range, [low, high] seconds, sent with each create
        # (the demo's accounts pace their renders so a newcomer sees them run).
        pace = config.settings.get("render_seconds")
        self._pace = [float(v) for v in pace] if isinstance(pace, list | tuple) else None
        self.account = config.account
        self.base_url = check_base_url(config.base_url)
        self._client = httpx_client_of(client)
        self._api = ApiClient(client, config, title="mock provider", default_base_url=None,
                              require_key=False)
        self._organization = config.settings.get("organization_id")

    def __repr__(self) -> str:
        return f"MockProvider(account={self.account!r}, base_url={self.base_url!r})"

    # -- helpers --------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """``text`` with the key scrubbed (every spelling, any 8+ of its characters), then
        cut short: the one scrub of every adapter (``ApiClient.shorten``)."""
        return self._api.shorten(text)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        during_create: bool = False,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> httpx2.Response:
        """One request through the same :class:`ApiClient` as every real adapter: sent
        once, no redirect followed, the key only to the mock's own address, a transport
        failure during a create marked as maybe sent."""
        json_body = None if body is None else _wire(body)
        return await self._api.request(method, path, during_create=during_create,
                                       params=params, json_body=json_body)

    def _status_error(
        self, response: httpx2.Response, *, during_create: bool = False, what: str = "request"
    ) -> ProviderError:
        code, message = _error_fields(response)
        text = self._scrub(f"mock provider {what}: HTTP {response.status_code} {code}: {message}")
        if response.status_code == 422 and code == "content_policy":
            return ProviderError(text, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=422)
        return classify_http_status(
            response.status_code,
            text,
            retry_after=parse_retry_after(response.headers.get("Retry-After")),
            during_create=during_create,
        )

    def _json(self, response: httpx2.Response, *, during_create: bool = False) -> dict[str, Any]:
        try:
            body = response.json()
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            raise ProviderError(
                f"mock provider: HTTP {response.status_code} answer is not a JSON object",
                error_class=ErrorClass.RETRYABLE,
                label=ErrorLabel.PROVIDER_ERROR,
                status_code=response.status_code,
                body_maybe_sent=during_create,
            )
        return body

    # -- Provider -------------------------------------------------------------------

    async def check_key(self) -> None:
        response = await self._call("GET", "/v1/account")
        if response.status_code != 200:
            raise self._status_error(response, what="key check")
        self._json(response)

    async def account_view(self) -> AccountView:
        """The mock account's figures from ``GET /v1/account/view`` (the server's
        ``--account-view``), each checked as a real provider's (``_account.Figures``). An
        answer naming another organization than the account's ``organization_id`` setting
        gives no figure."""
        response, cut = await self._api.get_bounded(ACCOUNT_VIEW_PATH, MAX_VIEW_BYTES)
        if response.status_code != 200:
            raise self._status_error(response, what="account view")
        return scrubbed(mock_view(self.account, response, cut, self._organization), self._api.scrub)

    def _create_body(self, request: RenderRequest, image: str | None) -> dict[str, Any]:
        """The create's JSON body as sent (``image``: which reference image it was, see
        :func:`_image_identity`); :meth:`echo` is built from it too, so the two cannot
        drift."""
        params = dict(request.params)
        if image is not None:
            params["image"] = image
        body: dict[str, Any] = {
            "prompt": request.prompt,
            "client_token": request.client_token,
            "job_key": request.job_key,
            "params": params,
        }
        if self._pace is not None:
            body["render_seconds"] = self._pace
        return _wire(body)

    async def submit(self, request: RenderRequest) -> str:
        image: str | None = None
        if image_kind(request.params.get("image")):
            # Read like a real adapter reads it (the import's pin, no links, size and
            # signature), so the mock proves a swapped image is never sent; the mock only
            # needs to know which image it was.
            image = _image_identity(await _load_image(request.params))
        body = self._create_body(request, image)
        response = await self._call("POST", "/v1/renders", during_create=True, body=body)
        if response.status_code not in (200, 201):
            raise self._status_error(response, during_create=True, what="create")
        render_id = self._json(response, during_create=True).get("id")
        if not isinstance(render_id, str) or not render_id:
            raise ProviderError(
                "mock provider create: the answer has no render id",
                error_class=ErrorClass.RETRYABLE,
                label=ErrorLabel.PROVIDER_ERROR,
                status_code=response.status_code,
                body_maybe_sent=True,
            )
        return render_id

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        response = await self._call("GET", f"/v1/renders/{provider_job_id}")
        if response.status_code == 404:
            # A mock that restarted forgot its renders. Unlike a real provider (whose
            # vanished render was billed; see docs/design-notes.md), a mock render costs
            # nothing, so it is reported as a failed render and rendered again.
            return RemoteStatus(phase=RemotePhase.FAILED, sub_status="unknown", error=ProviderError(
                self._scrub(f"mock provider poll: render {provider_job_id} is unknown "
                            "(the mock restarted); it is rendered again"),
                error_class=ErrorClass.RETRYABLE,
                label=ErrorLabel.PROVIDER_ERROR,
                status_code=404,
            ))
        if response.status_code != 200:
            raise self._status_error(response, what="poll")
        status = _status_from(self._json(response), self.base_url, self._scrub)
        poll_after = _float_or_none(response.headers.get("X-Poll-After"))
        return RemoteStatus(
            phase=status.phase, sub_status=status.sub_status, progress=status.progress,
            video_url=status.video_url, error=status.error, cost=status.cost,
            poll_after=poll_after,
        )

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        """The renders of ``provider_job_ids`` found in the key's list, newest first
        (``GET /v1/renders?with=status&limit=100&before=CURSOR``: the renders in flight are the
        newest), up to :attr:`poll_many_page_budget` pages or until all are found. Each
        record is read by :meth:`poll`'s own parser; a record it cannot read, or a
        finished one without its link, is left out (its own poll decides). A first page
        that fails, or is not a page of renders, raises as a poll would; a later one ends
        the read with what was found."""
        wanted = set(provider_job_ids)
        found: dict[str, RemoteStatus] = {}
        cursor: str | None = None
        for _ in range(self.poll_many_page_budget):
            response = await self._renders_page(
                {"limit": str(MAX_LIST_PAGE), "with": "status"}, cursor)
            if response is None:
                break
            if response.status_code == 404 and _error_fields(response)[0] == "list_disabled":
                self.supports_poll_many = False
            if response.status_code != 200:
                if cursor is None:
                    raise self._status_error(response, what="list")
                break
            items, cursor = self._status_page(response)
            poll_after = _float_or_none(response.headers.get("X-Poll-After"))
            for item in items:
                render_id = item.get("id")
                if not isinstance(render_id, str) or render_id not in wanted:
                    continue
                try:
                    status = _status_from(item, self.base_url, self._scrub)
                except ProviderError:
                    continue  # unreadable: its own poll decides
                if status.phase is RemotePhase.SUCCEEDED and not status.video_url:
                    continue  # the list may lag its file: its own poll decides
                found[render_id] = RemoteStatus(
                    phase=status.phase, sub_status=status.sub_status,
                    progress=status.progress, video_url=status.video_url,
                    error=status.error, cost=status.cost, poll_after=poll_after)
            if cursor is None or wanted <= found.keys():
                break
        return found

    async def _renders_page(self, query: dict[str, str], cursor: str | None
                            ) -> httpx2.Response | None:
        """``GET /v1/renders`` with ``query``, the page before ``cursor`` (None: the
        first). The first page's request failing raises, as a poll's would; a later one's
        is None: the read ends with what the earlier pages gave."""
        if cursor is not None:
            query = {**query, "before": cursor}
        try:
            return await self._call("GET", "/v1/renders", params=query)
        except ProviderError:
            if cursor is None:
                raise
            return None

    def _status_page(self, response: httpx2.Response
                     ) -> tuple[list[dict[str, Any]], str | None]:
        """The records (objects) of one list page and the next cursor (None: no more);
        an answer of another shape raises as an unreadable poll answer does."""
        page = _page_of(response)
        if page is None:
            raise ProviderError(
                "mock provider list: the answer is not a page of renders",
                error_class=ErrorClass.RETRYABLE, label=ErrorLabel.PROVIDER_ERROR,
                status_code=response.status_code)
        data, cursor = page
        return [item for item in data if isinstance(item, dict)], cursor

    async def lookup(self, request: RenderRequest) -> str | None:
        if not self.supports_lookup:
            raise _lookup_impossible()
        response = await self._call(
            "GET", "/v1/renders", params={"client_token": request.client_token}
        )
        if response.status_code == 404 and _error_fields(response)[0] == "lookup_disabled":
            raise _lookup_impossible()
        if response.status_code != 200:
            raise self._status_error(response, what="lookup")
        data = self._json(response).get("data")
        if not isinstance(data, list):
            raise ProviderError(
                "mock provider lookup: the answer has no 'data' list",
                error_class=ErrorClass.RETRYABLE, label=ErrorLabel.PROVIDER_ERROR,
                status_code=response.status_code,
            )
        for item in data:
            if (
                isinstance(item, dict)
                and item.get("client_token") == request.client_token
                and isinstance(item.get("id"), str)
            ):
                return str(item["id"])
        return None

    # -- SearchableProvider ---------------------------------------------------------

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """What the mock's list echoes of ``request``: ``{"prompt", "params"}`` exactly as
        :meth:`submit` sends them (the same body builder, JSON-normalised).

        The reference image is named as submit names it: a link as given; a local file
        pinned at import (``image_sha256``) by that pin, without reading it (submit sends
        nothing else, and the file may be gone since); an unpinned file or a data: URI
        read again with submit's own checks (a ProviderError if it is unusable now)."""
        image: str | None = None
        if image_kind(request.params.get("image")):
            pin = request.params.get("image_sha256")
            if image_kind(request.params["image"]) == "file" and isinstance(pin, str) and pin:
                image = "sha256:" + pin.strip().lower()
            else:
                with ThreadPoolExecutor(max_workers=1) as pool:
                    loaded = pool.submit(asyncio.run, _load_image(request.params)).result()
                image = _image_identity(loaded)
        return _echo_of(self._create_body(request, image))

    async def search(self, since: float, until: float) -> SearchResult:
        """The key's renders from ``since`` on, newest first, read from the mock's list
        (``GET /v1/renders?created_after=SINCE&before=CURSOR``) up to
        :attr:`search_page_budget` pages. ``complete`` when a page says no more follow
        (the server filters by ``created_after``) or a record older than ``since`` was
        read; not when the budget ran out or a later page failed. ``until`` is not sent:
        newer records are returned too (the engine windows them)."""
        if not self.supports_search:
            raise _search_impossible()
        records: list[RemoteRecord] = []
        cursor: str | None = None
        for _ in range(self.search_page_budget):
            response = await self._renders_page({"created_after": repr(float(since))}, cursor)
            if response is None:
                return SearchResult(tuple(records), complete=False)  # failed mid-way
            if response.status_code in (404, 405):
                # A server without the list (--no-list, or one older than the list).
                self.supports_search = False
                raise _search_impossible(response.status_code)
            if response.status_code != 200:
                if cursor is None:
                    raise self._status_error(response, what="list")
                return SearchResult(tuple(records), complete=False)
            page, more, cursor = self._list_page(response)
            records += page
            older = any(r.created_at is not None and r.created_at < since for r in page)
            if older or not more:
                return SearchResult(tuple(records), complete=True)
        return SearchResult(tuple(records), complete=False)

    def _list_page(self, response: httpx2.Response
                   ) -> tuple[list[RemoteRecord], bool, str | None]:
        """The records of one list page, whether more follow, and the next cursor. An
        answer of another shape is an unknown outcome (never "no render")."""
        page = _page_of(response)
        if page is None:
            raise outcome_unknown(self._api, "the list answer is not a page of renders",
                                  response.text[:300], status_code=response.status_code)
        data, cursor = page
        records: list[RemoteRecord] = []
        for item in data:
            render_id = item.get("id") if isinstance(item, dict) else None
            if not isinstance(item, dict) or not isinstance(render_id, str) or not render_id:
                raise outcome_unknown(self._api, "a listed render has no readable id",
                                      item, status_code=response.status_code)
            prompt, params, status = item.get("prompt"), item.get("params"), item.get("status")
            records.append(RemoteRecord(
                provider_job_id=render_id,
                created_at=_number(item.get("created_at")),
                status=status if isinstance(status, str) else "",
                echo=_echo_of({"prompt": prompt, "params": params})
                if isinstance(prompt, str) and isinstance(params, dict) else None,
            ))
        return records, cursor is not None, cursor

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            url = (await self.poll(provider_job_id)).video_url
            if not url:
                raise _download_failed("the render has no video link")
            return url

        # Links carry a signature, not the key: none is sent with them.
        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        response = await self._call("POST", f"/v1/renders/{provider_job_id}/cancel")
        if response.status_code in (200, 404, 409):  # cancelled, unknown, already over
            return
        raise self._status_error(response, what="cancel")


def _wire(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` as JSON carries it (row params may hold values JSON cannot carry, a Path:
    sent as their text)."""
    wired: dict[str, Any] = json.loads(json.dumps(body, default=str))
    return wired


def _echo_of(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The echo of a create body or of a list record: its prompt and params, JSON-normal."""
    return _wire({"prompt": fields["prompt"], "params": fields["params"]})


async def _load_image(params: Mapping[str, Any]) -> ImageInput:
    return await load_image(params["image"], "Mock provider", params.get("image_sha256"))


def _image_identity(image: ImageInput) -> str:
    """Which reference image a create sent: its link, or the sha256 of its bytes."""
    return image.url or "sha256:" + hashlib.sha256(image.data or b"").hexdigest()


def _error_fields(response: httpx2.Response) -> tuple[str, str]:
    """The provider's ``error.code`` and ``error.message``, tolerating any body."""
    try:
        body = response.json()
    except (ValueError, RecursionError):
        return "", ""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", ""
    return str(error.get("code") or ""), str(error.get("message") or "")


def _status_from(body: Mapping[str, Any], base_url: str,
                 scrub: Callable[[str], str]) -> RemoteStatus:
    word = str(body.get("status") or "")
    phase = _PHASES.get(word)
    if phase is None:
        raise ProviderError(
            f"mock provider poll: unknown status {scrub(word)[:40]!r}",
            error_class=ErrorClass.RETRYABLE, label=ErrorLabel.PROVIDER_ERROR,
        )
    progress = _float_or_none(body.get("progress"))
    if progress is not None:
        progress = min(1.0, max(0.0, progress / 100.0))
    video_url = body.get("video_url")
    error: ProviderError | None = None
    if phase is RemotePhase.FAILED:
        raw = body.get("error")
        fields = raw if isinstance(raw, dict) else {}
        code = str(fields.get("code") or "unknown")
        message = scrub(str(fields.get("message") or ""))
        if code == "content_policy":
            error_class, label = ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY
        else:
            error_class, label = ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR
        error = ProviderError(f"mock render failed: {scrub(code)}: {message}",
                              error_class=error_class, label=label)
    return RemoteStatus(
        phase=phase,
        sub_status=word,
        progress=progress,
        video_url=urljoin(base_url + "/", video_url) if isinstance(video_url, str) else None,
        error=error,
        cost=_float_or_none(body.get("cost")),
    )


def _float_or_none(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _number(value: object) -> float | None:
    """A JSON number as a float (not a bool, a text or an infinity), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _download_failed(detail: str, status_code: int | None = None) -> ProviderError:
    return ProviderError(
        f"mock provider download: {detail}",
        error_class=ErrorClass.RETRYABLE,
        label=ErrorLabel.DOWNLOAD_FAILED,
        status_code=status_code,
    )


def _lookup_impossible() -> ProviderError:
    return ProviderError(
        "mock provider: lookup by client token is switched off for this account",
        error_class=ErrorClass.PERMANENT,
        label=ErrorLabel.SUBMIT_UNKNOWN,
    )


def _search_impossible(status_code: int | None = None) -> ProviderError:
    return ProviderError(
        "mock provider: this account's renders cannot be listed (its reconcile setting is "
        "not 'search', or the server has no list)",
        error_class=ErrorClass.PERMANENT,
        label=ErrorLabel.SUBMIT_UNKNOWN,
        status_code=status_code,
        body_maybe_sent=True,
    )


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> MockProvider:
    """Build the adapter for one account (``config.base_url`` is required)."""
    return MockProvider(httpx_client_of(session), config)


INFO = ProviderInfo(
    kind=KIND,
    title="Mock provider (local)",
    factory=create,
    params=ParamSpec(
        models=MODELS,
        duration_range=(1, 20),
        aspect_ratios=("16:9", "9:16", "1:1"),
        resolutions=("480p", "720p"),
        seed=True,
        negative_prompt=True,
        reference_image=True,
        price_per_second={"mock-1": 0.01, "mock-2": 0.02},
        price_source="mock, 2026-11",
        default_capacity=4,
    ),
    default_base_url=None,
    requires_key=False,
)


def _page_of(response: httpx2.Response) -> tuple[list[Any], str | None] | None:
    """A list page's ``data`` and its next cursor (None: no more), or None when the answer
    is not such a page (``has_more`` a bool; a cursor given whenever more follow)."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    data, more, cursor = body.get("data"), body.get("has_more"), body.get("next_cursor")
    if not isinstance(data, list) or not isinstance(more, bool) or (
            more and not (isinstance(cursor, str) and cursor)):
        return None
    return data, cursor if more and isinstance(cursor, str) else None
