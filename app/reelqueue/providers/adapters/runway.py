"""Runway API adapter (kind ``runway``): text- and image-to-video tasks.

Facts from runwayml/sdk-python 5.13.0 (commit c604e0e: ``api.md``,
``types/task_retrieve_response.py``) and Runway's API docs (docs.dev.runwayml.com
api-details/errors, api-details/task-failures, usage/tiers): ``POST /v1/text_to_video``
or ``/v1/image_to_video`` answers ``{id}``; ``GET /v1/tasks/{id}`` reports ``PENDING`` /
``THROTTLED`` (over the tier's concurrency: the task waits, it is not refused) /
``RUNNING`` (``progress`` 0..1) /
``SUCCEEDED`` (``output``: URLs that expire in 24-48 h; re-GET the task for fresh ones) /
``FAILED`` (``failure`` + ``failureCode``, classified by ``FAILURE_RULES``) / ``CANCELLED``.
A 429 has two meanings: on a create it is the daily generation cap (a rolling 24 h
window), so the account pauses for a long while; on any other request (a poll) it is the
short-lived "too many requests within a period of time", so only that request waits, a
few seconds (Retry-After, else the engine's jittered poll back-off). An answer without a
readable id or status is an unknown outcome, never "absent". No idempotency key, no way to
find a task by our token: ``supports_lookup`` is False.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import date
from typing import Any

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._account import (
    MAX_VIEW_BYTES,
    Figures,
    KeyCheckAnswer,
    answer_json,
    mapping,
    read_at_of,
    scrubbed,
)
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    cancel_request,
    check_row,
    create_answer,
    created_id,
    fraction,
    fresh_video_link,
    get_json,
    outcome_unknown,
    plain_status,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    json_or_none,
    mentions,
    provider_words,
    retry_after_of,
)
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import duration_problem, param_bool, param_int, param_str
from reelqueue.providers.adapters._usage import runway_usage_report
from reelqueue.providers.base import (
    AccountView,
    Charging,
    ModelLimit,
    ParamProblem,
    ParamSpec,
    PriceVariant,
    ProviderConfig,
    RemoteStatus,
    RenderRequest,
    UsageReport,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo

KIND = "runway"
TITLE = "Runway"
DEFAULT_BASE_URL = "https://api.dev.runwayml.com"
API_VERSION = "2024-11-06"
GEN4_MODELS = ("gen4.5", "gen4_turbo")
VEO_MODELS = ("veo3.1", "veo3.1_fast")
POLL_SECONDS = 6.0  # the SDK's wait_for_task_output cadence (jitter is the engine's job)
# A 429 on a create is the daily cap of a rolling 24 h window: slots free up as old
# generations age out, at an unknown time. Without a Retry-After we try again after this
# long; one refused create an hour costs nothing. Accounts may override it (settings
# "daily_cap_cooldown"). A 429 on a poll never waits this long (see ``_error``).
DAILY_CAP_COOLDOWN = 3600.0

# failureCode families (docs.dev.runwayml.com/api-details/task-failures). SAFETY.INPUT.*,
# SAFETY.OUTPUT.* and INPUT_PREPROCESSING.SAFETY.TEXT: "You should not retry" (retrying
# blocked content can suspend the account). INTERNAL.BAD_OUTPUT.*: "You may retry these
# generations, but they are not likely to succeed": the one documented retry.
# INPUT_PREPROCESSING.INTERNAL ("a problem performing content moderation") carries no
# retry advice, so like every undocumented code it is permanent. A code is matched by its
# longest documented family (``failure_family``).
FAILURE_RULES = FailureRules(
    retryable={"INTERNAL.BAD_OUTPUT": ErrorLabel.PROVIDER_ERROR},
    account={},  # credits and the daily cap come as HTTP 400/429 answers (``_error``)
    permanent={"SAFETY": ErrorLabel.CONTENT_POLICY,
               "SAFETY.INPUT": ErrorLabel.CONTENT_POLICY,
               "SAFETY.OUTPUT": ErrorLabel.CONTENT_POLICY,
               "INPUT_PREPROCESSING.SAFETY": ErrorLabel.CONTENT_POLICY,
               "INPUT_PREPROCESSING.SAFETY.TEXT": ErrorLabel.CONTENT_POLICY,
               "INPUT_PREPROCESSING.INTERNAL": ErrorLabel.PROVIDER_ERROR,
               "INPUT_PREPROCESSING": ErrorLabel.INVALID_INPUT},
    source="docs.dev.runwayml.com/api-details/task-failures (2026); runwayml/sdk-python "
           "5.13.0 types/task_retrieve_response.py (failureCode)",
)
_FAMILIES = sorted({*FAILURE_RULES.retryable, *FAILURE_RULES.permanent}, key=len,
                   reverse=True)


def failure_family(code: str) -> str:
    """The longest documented family a failureCode belongs to ("SAFETY.INPUT.TEXT" ->
    "SAFETY.INPUT"), or the code itself when none is documented."""
    for family in _FAMILIES:
        if code == family or code.startswith(family + "."):
            return family
    return code

# (aspect ratio, resolution) -> Runway's pixel "ratio".
_TEXT_RATIOS = {("16:9", "720p"): "1280:720", ("9:16", "720p"): "720:1280"}
_VEO_RATIOS = {**_TEXT_RATIOS, ("16:9", "1080p"): "1920:1080", ("9:16", "1080p"): "1080:1920"}
_IMAGE_RATIOS = {**_TEXT_RATIOS, ("4:3", "720p"): "1104:832", ("3:4", "720p"): "832:1104",
                 ("1:1", "720p"): "960:960", ("21:9", "720p"): "1584:672"}

# THROTTLED: over the tier's concurrency; the task starts when a slot frees.
_PHASES = {"PENDING": RemotePhase.QUEUED, "THROTTLED": RemotePhase.QUEUED,
           "CANCELLED": RemotePhase.CANCELLED}

PARAMS = ParamSpec(
    models=GEN4_MODELS + VEO_MODELS,
    durations=None,
    duration_range=(2.0, 10.0),
    aspect_ratios=("16:9", "9:16", "4:3", "3:4", "1:1", "21:9"),
    resolutions=("720p", "1080p"),
    seed=True,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=1000,
    # 1 credit = $0.01: gen4.5 12 credits/s, veo3.1 40 with audio, veo3.1_fast 15 with audio
    # (docs.dev.runwayml.com/guides/pricing, read 2026-09-28 by a published price check);
    # gen4_turbo 5 and veo3.1 without audio 20 (PROVIDERS.md section 3 [note]). A row that
    # says nothing about audio sends none (Runway's default applies): it is quoted with
    # audio, the dearer; veo3.1_fast has no silent price, so it is always the audio one.
    price_per_second={"gen4.5": 0.12, "gen4_turbo": 0.05, "veo3.1": 0.40,
                      "veo3.1_fast": 0.15},
    price_variants={"veo3.1": (PriceVariant(0.20, audio=False),)},
    price_source="docs.dev.runwayml.com/guides/pricing ($0.01 a credit), as read on "
    "2026-09-28 by a published price check and in PROVIDERS.md section 3; read 2026-12-01",
    default_capacity=1,  # Tier 1: 1-2 concurrent per model; excess waits as THROTTLED
    # The balance is creditBalance in credits, $0.01 each (the pricing page). When a task's
    # credits leave it (at create, or at the end) is not in the documents read
    # (docs/providers.md): "unknown", so the claim subtracts every render in flight and
    # every create since the balance was read (issue 32 item 4).
    charging=Charging("unknown", "credits", 0.01),
    # The same prices in Runway's own unit, credits per second (with audio or unsaid).
    unit_price_per_second={"gen4.5": 12.0, "gen4_turbo": 5.0, "veo3.1": 40.0,
                           "veo3.1_fast": 15.0},
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """Rules ParamSpec cannot say: per-model durations, ratios and the image-only model."""
    model = param_str(params, "model") or PARAMS.models[0]
    ratio = param_str(params, "aspect_ratio") or "16:9"
    resolution = param_str(params, "resolution") or "720p"
    has_image = bool(image_kind(params.get("image")))
    problems: list[ParamProblem] = []
    if model in VEO_MODELS:
        # The Gen-4 models that would take this row as it is (720p, its ratio, any image).
        gen4 = [m for m in GEN4_MODELS if (has_image or m != "gen4_turbo")
                and (ratio, resolution) in (_IMAGE_RATIOS if has_image else _TEXT_RATIOS)]
        problems += duration_problem(params, allowed=(4, 6, 8), model=gen4)
        if (ratio, resolution) not in _VEO_RATIOS:
            problems.append(ParamProblem.of(
                f"{model} on Runway takes 16:9 or 9:16 at 720p or 1080p",
                aspect_ratio=["16:9", "9:16"] if resolution in ("720p", "1080p") else [],
                resolution=["720p", "1080p"] if ratio in ("16:9", "9:16") else []))
        if params.get("seed") not in (None, ""):
            problems.append(ParamProblem.of(f"{model} on Runway takes no seed", model=gen4,
                                            seed=[None]))
    else:
        problems += duration_problem(params, lo=2, hi=10)
        if model == "gen4_turbo" and not has_image:
            message = "gen4_turbo makes video from an image only: give an image"
            # gen4.5 takes the row only at 720p in a text-to-video ratio; else add an image.
            problems.append(ParamProblem.of(message, model=["gen4.5"])
                            if (ratio, resolution) in _TEXT_RATIOS
                            else ParamProblem.of(message, image=[]))
        if resolution != "720p":
            problems.append(ParamProblem.of(
                f"{model} renders 720p only (1080p needs veo3.1 or veo3.1_fast)",
                model=VEO_MODELS if (ratio, resolution) in _VEO_RATIOS
                and params.get("duration") in (None, "", 4, 6, 8)
                and params.get("seed") in (None, "") else [],
                resolution=["720p"]))
        elif (ratio, resolution) not in (_IMAGE_RATIOS if has_image else _TEXT_RATIOS):
            problems.append(ParamProblem.of(
                f"aspect ratio {ratio} on {model} needs an image; text-to-video is 16:9 or 9:16",
                aspect_ratio=["16:9", "9:16"], image=[]))
    try:
        param_int(params, "seed")
    except ValueError as exc:
        problems.append(ParamProblem.of(str(exc), seed=[None]))
    return problems


ORGANIZATION_PATH = "/v1/organization"
USAGE_PATH = "/v1/organization/usage"


def organization_view(account: str, response: httpx2.Response, cut: bool) -> AccountView:
    """The account view of a ``GET /v1/organization`` answer, each figure checked
    (``_account.Figures``): unusable ones are None with a reason, the rest kept. Models
    ReelQueue does not render here (image, audio, voice...) are left out."""
    read_at = read_at_of(response)
    body, problem = answer_json(response, cut)
    figures = Figures()
    if body is None:
        figures.refuse(problem or "unreadable answer")
        return figures.view(account, None, [], None, read_at)
    balance = figures.balance(body.get("creditBalance"), "credit balance", "credits",
                              currency=body.get("currency"), expected_currency="credits")
    tier_models = mapping(mapping(body.get("tier")).get("models"))
    usage = body.get("usage")
    usage_read = isinstance(usage, dict) and isinstance(usage.get("models"), dict)
    usage_models = mapping(mapping(usage).get("models"))
    if not tier_models:
        figures.refuse("tier limits missing")
    if not usage_read:
        figures.refuse("usage missing")
    limits: list[ModelLimit] = []
    for name in PARAMS.models:
        tier = tier_models.get(name)
        if tier is None:
            continue  # not offered on this tier: nothing to show
        tier = mapping(tier)
        used = usage_models.get(name)
        if used is None and usage_read:
            used = {"dailyGenerations": 0}  # not used in the past day: no entry
        limits.append(ModelLimit(
            name,
            concurrency=figures.count(tier.get("maxConcurrentGenerations"),
                                      f"{name} concurrency"),
            daily=figures.count(tier.get("maxDailyGenerations"), f"{name} daily limit"),
            daily_window="rolling_24h",
            used_today=figures.count(mapping(used).get("dailyGenerations"),
                                     f"{name} generations today",
                                     required=usage_read)))
    return figures.view(account, balance, limits, None, read_at)


class RunwayProvider:
    """One Runway account.

    Attributes:
        kind: "runway".
        supports_lookup: False; Runway cannot find a task by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(
            client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
            auth_headers=lambda key: {"Authorization": f"Bearer {key}",
                                      "X-Runway-Version": API_VERSION},
        )
        self._cooldown = float(config.settings.get("daily_cap_cooldown", DAILY_CAP_COOLDOWN))
        # The key check's answer, kept a minute for account_view.
        self._organization = KeyCheckAnswer(self._api.get_bounded, ORGANIZATION_PATH,
                                            self._error)

    def __repr__(self) -> str:
        return f"RunwayProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /v1/organization``: read-only, returns tier, credits and daily usage. The
        answer is kept a minute for :meth:`account_view` (the key check's own answer)."""
        await self._organization.read(keep=True)

    async def account_view(self) -> AccountView:
        """The organization's credit balance, each model's tier limits and today's
        generations, from ``GET /v1/organization`` (``organization_retrieve_response.py``
        of runwayml/sdk-python: ``creditBalance``; ``tier.models[m]``
        ``maxConcurrentGenerations`` / ``maxDailyGenerations``; ``usage.models[m]``
        ``dailyGenerations``, "in the past day": a rolling 24 h window, as Runway's tiers
        page says). Runway publishes no organization id in it."""
        response, cut = await self._organization.for_view()
        return scrubbed(organization_view(self._api.account, response, cut), self._api.scrub)

    async def usage_report(self, start: date, end: date) -> UsageReport:
        """The organization's credits used per model and UTC day, ``start`` to ``end``
        (not included): ``POST /v1/organization/usage`` with ``startDate``/``beforeDate``
        (runwayml/sdk-python ``resources/organization.py`` ``retrieve_usage``; at most 90
        days). One bounded read; the answer's figures checked (``_usage``)."""
        response, cut = await self._api.read_bounded(
            "POST", USAGE_PATH, MAX_VIEW_BYTES,
            json_body={"startDate": start.isoformat(), "beforeDate": end.isoformat()})
        if not response.is_success:
            raise self._error(response)
        report = runway_usage_report(response, cut, start, end, PARAMS.models)
        if report.problem is None:
            return report
        return replace(report, problem=self._api.scrub(report.problem))

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        path, body = await self._create_body(request)
        answer = await create_answer(self._api, path, self._error, json_body=body)
        return created_id(self._api, answer.get("id"), "task id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._task(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        """Runway tasks cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "Runway tasks cannot be searched by our client token "
                              f"{request.client_token}; look for it in the Runway developer portal")

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            # Output URLs expire in 24-48 h; the task hands out fresh ones on every GET.
            return await fresh_video_link(
                self._api, self.poll(provider_job_id),
                lambda latest: f"task {provider_job_id} no longer offers its video "
                f"({latest.sub_status})")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        await cancel_request(self._api, "DELETE", f"/v1/tasks/{provider_job_id}", self._error,
                             fine=(404,))

    # -- internals ------------------------------------------------------------------------

    async def _create_body(self, request: RenderRequest) -> tuple[str, dict[str, Any]]:
        params = request.params
        model = param_str(params, "model") or PARAMS.models[0]
        ratio_key = (param_str(params, "aspect_ratio") or "16:9",
                     param_str(params, "resolution") or "720p")
        is_veo = model in VEO_MODELS
        duration = param_int(params, "duration") or (8 if is_veo else 5)
        body: dict[str, Any] = {"model": model, "promptText": request.prompt,
                                "duration": duration}
        image = params.get("image")
        if image_kind(image):
            loaded = await load_image(image, TITLE, params.get("image_sha256"))
            body["promptImage"] = loaded.url_or_data_uri()
            path = "/v1/image_to_video"
            ratios = _VEO_RATIOS if is_veo else _IMAGE_RATIOS
        else:
            path = "/v1/text_to_video"
            ratios = _VEO_RATIOS if is_veo else _TEXT_RATIOS
        body["ratio"] = ratios[ratio_key]
        seed = param_int(params, "seed")
        if seed is not None and not is_veo:
            body["seed"] = seed
        audio = param_bool(params, "audio")
        if audio is not None and is_veo:
            body["audio"] = audio
        return path, body

    async def _task(self, task_id: str) -> dict[str, Any]:
        return await get_json(self._api, f"/v1/tasks/{task_id}", self._error)

    def _status(self, task: Mapping[str, Any]) -> RemoteStatus:
        state = task.get("status")
        if not isinstance(state, str) or not state:
            # Every task answer has a status: one without it is not about the task.
            raise outcome_unknown(self._api, "the answer about the task has no status", task)
        if state == "RUNNING":
            return RemoteStatus(RemotePhase.RUNNING, sub_status=state,
                                progress=fraction(task.get("progress")), poll_after=POLL_SECONDS)
        if state == "SUCCEEDED":
            output = task.get("output") or []
            url = output[0] if isinstance(output, list) and output else None
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=url if isinstance(url, str) else None)
        if state == "FAILED":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(task))
        return plain_status(state, _PHASES, POLL_SECONDS)

    def _failure(self, task: Mapping[str, Any]) -> ProviderError:
        raw_code = task.get("failureCode")
        code = raw_code if isinstance(raw_code, str) else ""
        reason = self._api.shorten(str(task.get("failure") or "no reason given"))
        # The rules decide by the code's documented family; the words are ours.
        decided = FAILURE_RULES.classify(self._api, None, failure_family(code) or None)
        if decided.label is ErrorLabel.CONTENT_POLICY:
            # Runway: do not show the raw moderation text to users; the code says enough.
            message = f"moderation refused the render ({code})"
        elif decided.error_class is ErrorClass.RETRYABLE:
            message = (f"render failed ({code}): {reason}. Retrying rarely helps; check the "
                       "input image (e.g. overlaid text)")
        elif decided.label is ErrorLabel.INVALID_INPUT:
            message = f"render refused its input ({code}): {reason}"
        else:
            message = f"render failed ({code or 'no code'}): {reason}"
        return self._api.error(message, decided.error_class, decided.label)

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        words = provider_words(response)
        message = self._api.message(response)
        issues = _issues(json_or_none(response))
        if issues:
            # A 400 names each bad field and why ("promptImage: Failed to fetch asset..."):
            # without them the user sees only "Validation of body failed".
            words = f"{words} ({issues})"
            message = f"{message} ({self._api.shorten(issues)})"
        if status == 429 and during_create:
            # A refused create is the daily generation cap: the account pauses.
            wait = retry_after_of(response)
            return ProviderError(
                f"{message} (daily generation cap reached)",
                error_class=ErrorClass.ACCOUNT, label=ErrorLabel.RATE_LIMITED,
                retry_after=self._cooldown if wait is None else wait, status_code=status)
        if status == 429:
            # Any other request (a poll, the key check): "too many requests within a period
            # of time", short-lived (api-details/errors: "May retry? Yes", with backoff and
            # jitter). Only this request waits: Retry-After if given, else None so the
            # engine's jittered poll back-off applies. Never the daily-cap cool-down.
            return ProviderError(
                f"{message} (too many requests; trying again in a few seconds)",
                error_class=ErrorClass.RETRYABLE, label=ErrorLabel.RATE_LIMITED,
                retry_after=retry_after_of(response), status_code=status)
        if status in (400, 402) and mentions(words, "credit", "balance"):
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status == 400 and mentions(words, *CONTENT_POLICY_WORDS):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        if issues and status in (400, 422):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.INVALID_INPUT, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def _issues(body: Any) -> str:
    """The per-field problems of a 400 answer (``issues[]`` of ``{path, message}``)."""
    if not isinstance(body, dict) or not isinstance(body.get("issues"), list):
        return ""
    parts = []
    for issue in body["issues"][:5]:
        if not isinstance(issue, dict) or not isinstance(issue.get("message"), str):
            continue
        path = issue.get("path")
        where = ".".join(str(p) for p in path) if isinstance(path, list) and path else ""
        parts.append(f"{where}: {issue['message']}" if where else issue["message"])
    return "; ".join(parts)


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> RunwayProvider:
    return RunwayProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
