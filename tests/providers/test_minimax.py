"""What is MiniMax's own: two APIs (V1 Hailuo, V2 H3) against their strict schemas, V1's
refusals inside HTTP 200 answers, the cancel of a queued V2 task only, its prices and why
a lost create cannot be looked for. The common behaviours run in conformance/test_suite.py
on the fakes and the two facts tables of conformance/minimax.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.minimax import (
    API,
    FILE_ID,
    FILES,
    IMAGE_URL,
    V1_CREATE,
    V1_TASK,
    V2_CREATE,
    V2_DELETE,
    V2_QUERY,
    V2_TASK,
    FakeMiniMax,
    make,
    request,
    v1_problems,
    v2_problems,
)
from provider_fakes import (
    HTML_PAGE,
    SENTINEL_KEY,
    VIDEO_BYTES,
    ClientFor,
    Router,
    all_texts,
    fixture,
    json_response,
    run_one_row,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.intake import ImportOptions, plan_import
from reelqueue.intake.estimate import UNKNOWN, quote_job
from reelqueue.providers.adapters import minimax
from reelqueue.providers.base import (
    ReconcileMethod,
    SearchableProvider,
    list_poll_of,
    reconcile_method,
    sends_client_token,
)

# -- the strict fakes refuse what the schema refuses ---------------------------------------

@pytest.mark.parametrize(("body", "words"), [
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "duration": 10, "resolution": "1080P"},
     "cannot render 1080P at 10"),
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "resolution": "512P"}, "cannot render"),
    ({"model": "MiniMax-Hailuo-2.3-Fast", "prompt": "x"}, "not allowed for t2v"),
    ({"model": "MiniMax-Hailuo-2.3", "prompt": "x", "aspect_ratio": "16:9"}, "unknown field"),
    ({"model": "MiniMax-Hailuo-2.3"}, "prompt required"),
])
def test_the_v1_fake_enforces_the_schema(body: dict[str, Any], words: str) -> None:
    assert any(words in p for p in v1_problems(body))


@pytest.mark.parametrize(("body", "words"), [
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}]}, "resolution is"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "768P",
      "duration": 6}, "needs a ratio"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "1080P",
      "duration": 6, "ratio": "16:9"}, "768P or 2K"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "2K",
      "duration": 16, "ratio": "16:9"}, "4-15"),
    ({"model": "MiniMax-H3", "content": [{"type": "text", "text": "x"}], "resolution": "2K",
      "duration": 6, "ratio": "16:9", "seed": 1}, "unknown field"),
    ({"model": "MiniMax-H3-Max", "content": [{"type": "text", "text": "x"}],
      "resolution": "2K", "duration": 6, "ratio": "16:9"}, "model must be"),
])
def test_the_v2_fake_enforces_the_schema(body: dict[str, Any], words: str) -> None:
    assert any(words in p for p in v2_problems(body))


# -- rows complete: exact bodies, every documented state ----------------------------------

@pytest.mark.parametrize(("params", "body"), [
    ({"model": "MiniMax-Hailuo-2.3", "duration": 6, "resolution": "1080p"},
     {"model": "MiniMax-Hailuo-2.3", "prompt": "A desert caravan at dusk", "duration": 6,
      "resolution": "1080P"}),
    ({"model": "MiniMax-Hailuo-2.3-Fast", "duration": 10, "image": IMAGE_URL},
     {"model": "MiniMax-Hailuo-2.3-Fast", "prompt": "A desert caravan at dusk",
      "duration": 10, "first_frame_image": IMAGE_URL}),
    ({"model": "MiniMax-Hailuo-02", "resolution": "512p", "image": IMAGE_URL},
     {"model": "MiniMax-Hailuo-02", "prompt": "A desert caravan at dusk",
      "resolution": "512P", "first_frame_image": IMAGE_URL}),
])
async def test_v1_rows_are_sent_as_the_schema_says(
    client_for: ClientFor, params: dict[str, Any], body: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(**params))
    assert job_id == f"v1:{V1_TASK}"
    assert (await provider.poll(job_id)).poll_after == minimax.POLL_SECONDS
    assert fake.sent() == body
    assert fake.rejections == []


@pytest.mark.parametrize(("params", "body"), [
    ({"model": "MiniMax-H3"},
     {"model": "MiniMax-H3", "content": [{"type": "text", "text": "A desert caravan at dusk"}],
      "resolution": "768P", "duration": 6, "ratio": "16:9"}),
    ({"model": "MiniMax-H3", "duration": 15, "resolution": "2K", "aspect_ratio": "9:16"},
     {"model": "MiniMax-H3", "content": [{"type": "text", "text": "A desert caravan at dusk"}],
      "resolution": "2K", "duration": 15, "ratio": "9:16"}),
    ({"model": "MiniMax-H3", "duration": 4, "image": IMAGE_URL},
     {"model": "MiniMax-H3", "content": [
         {"type": "text", "text": "A desert caravan at dusk"},
         {"type": "image_url", "image_url": {"url": IMAGE_URL}, "role": "first_frame"}],
      "resolution": "768P", "duration": 4, "ratio": "adaptive"}),
])
async def test_v2_rows_are_sent_as_the_official_schema_says(
    client_for: ClientFor, params: dict[str, Any], body: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(**params))
    assert job_id == f"v2:{V2_TASK}"
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert seen[2].video_url == fixture("minimax", "v2_task_succeeded")["task"]["content"]["url"]
    assert fake.sent() == body
    assert fake.rejections == []


async def test_v2_image_from_a_file_is_sent_as_a_data_uri(
    client_for: ClientFor, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(600)
    (tmp_path / "first.png").write_bytes(png)
    fake = FakeMiniMax()
    await make(client_for(fake.router)).submit(request(model="MiniMax-H3",
                                                       image=str(tmp_path / "first.png")))
    item = fake.sent()["content"][1]
    assert item["role"] == "first_frame"
    assert item["image_url"]["url"].startswith("data:image/png;base64,")
    assert fake.rejections == []


# -- states and failure reasons ------------------------------------------------------------


def test_the_v1_cli_spelling_failed_is_a_failure_too() -> None:
    assert "Failed" in minimax._V1_FAILED and "Fail" in minimax._V1_FAILED


async def test_v1_file_without_a_download_link_is_still_succeeded(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v1_states=["v1_query_Success"])
    fake.router.script("GET", FILES, json_response(200, {
        "file": {"file_id": int(FILE_ID)}, "base_resp": {"status_code": 0,
                                                         "status_msg": "success"}}))
    status = await make(client_for(fake.router)).poll(f"v1:{V1_TASK}")
    assert (status.phase, status.video_url) == (RemotePhase.SUCCEEDED, None)


async def test_a_query_answered_by_a_proxy_page_is_polled_again(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    fake.router.script("GET", V2_QUERY, httpx2.Response(
        200, content=HTML_PAGE, headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(f"v2:{V2_TASK}")
    assert caught.value.error_class is ErrorClass.RETRYABLE


# -- downloads, reattach, cancel, key -----------------------------------------------------

async def test_cancel_deletes_only_a_queued_v2_task(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v2_states=["v2_task_queued", "v2_task_succeeded"])
    provider = make(client_for(fake.router))
    await provider.cancel(f"v1:{V1_TASK}")
    assert fake.router.calls == []  # V1 has no cancel
    await provider.cancel(f"v2:{V2_TASK}")
    assert fake.router.count("DELETE", V2_DELETE) == 1
    # A finished task: DELETE would delete its record (and the paid video), so none is sent.
    await provider.cancel(f"v2:{V2_TASK}")
    assert fake.router.count("DELETE", V2_DELETE) == 1


async def test_a_key_rejection_quoting_the_header_never_shows_the_key(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    """1004 worded with our own Authorization header (V1 in a 200, V2 in a 401)."""
    caplog.set_level(logging.DEBUG)
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    fake.router.script("POST", V1_CREATE, lambda r: json_response(200, {
        "base_resp": {"status_code": 1004, "status_msg": "bad key "
                      + r.headers["authorization"]}}))
    fake.router.script("POST", V2_CREATE, lambda r: json_response(401, {
        "type": "error", "error": {"type": "authorized_error", "message": "bad key "
                                   + r.headers["authorization"] + " (1004)"}}))
    for model in ("MiniMax-Hailuo-2.3", "MiniMax-H3"):
        with pytest.raises(ProviderError) as caught:
            await provider.submit(request(model=model))
        assert caught.value.label is ErrorLabel.KEY_REJECTED
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


# -- rows MiniMax would refuse are refused before anything is sent -------------------------

@pytest.mark.parametrize(("prompt", "params"), [
    ("x" * 2001, {"model": "MiniMax-Hailuo-2.3"}),
    ("   ", {"model": "MiniMax-H3"}),
    ("ok", {"model": "MiniMax-H3-Max"}),  # not in the V2 create schema's model enum
    ("ok", {"model": "MiniMax-H3", "duration": 3}),
    ("ok", {"model": "MiniMax-H3", "aspect_ratio": "adaptive"}),
])
async def test_rows_the_api_would_refuse_are_not_sent(
    client_for: ClientFor, prompt: str, params: dict[str, Any]
) -> None:
    fake = FakeMiniMax()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(prompt, **params))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


def test_sheet_rows_without_duration_or_ratio_cells_import_for_both_apis(
    tmp_path: Path,
) -> None:
    """The intake fills empty cells from PARAMS: those defaults must suit V1 and V2."""
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("prompt,model,duration,aspect ratio\n"
                     "a,MiniMax-Hailuo-2.3,,\n"      # 6 s, no ratio
                     "b,MiniMax-H3,,\n"              # 6 s, 16:9 at send time
                     "c,MiniMax-H3,12,9:16\n"
                     "d,MiniMax-Hailuo-2.3,,16:9\n"  # V1 takes no ratio
                     "e,MiniMax-H3,5,\n", encoding="utf-8")  # 5 s not offered (see PARAMS)
    plan = plan_import(sheet, ImportOptions(provider="minimax", output_root=tmp_path / "v"),
                       now=1_790_000_000.0)
    assert [job.row_number for job in plan.jobs] == [2, 3, 4]
    assert sorted({e.row_number for e in plan.errors}) == [5, 6]
    assert [job.params.get("duration") for job in plan.jobs] == [6, 6, 12]
    assert [job.params.get("aspect_ratio") for job in plan.jobs] == [None, None, "9:16"]


# -- prices (platform.minimax.io/docs/guides/pricing-paygo; SOURCE.md "Prices") ---------

# The page's "Video" section, "Legacy Models": USD per whole video, as MiniMax lists them.
PAGE_V1_PRICES = [tuple(row) for row in fixture("minimax", "prices_legacy_models")]


def quote(model: str, resolution: str | None, seconds: int) -> Any:
    row: dict[str, Any] = {"model": model, "duration": seconds}
    if resolution is not None:
        row["resolution"] = resolution
    return quote_job("minimax", row, None, minimax.PARAMS)


@pytest.mark.parametrize(("model", "resolution", "seconds", "usd"), PAGE_V1_PRICES)
def test_each_documented_v1_video_costs_the_pages_price(
        model: str, resolution: str, seconds: int, usd: float) -> None:
    for cell in (resolution, resolution.lower()):  # a sheet says "768p"
        priced = quote(model, cell, seconds)
        assert priced.usd == usd, (model, cell, seconds)
        assert "pricing-paygo" in priced.source and "Legacy Models" in priced.source
        assert "2026-12-06" in priced.source


@pytest.mark.parametrize(("model", "resolution", "seconds"), [
    ("MiniMax-Hailuo-2.3", "1080P", 10),       # MiniMax renders 1080P at 6 s only
    ("MiniMax-Hailuo-2.3-Fast", "1080P", 10),
    ("MiniMax-Hailuo-02", "1080P", 10),
    ("MiniMax-Hailuo-2.3", "512P", 6),         # 512P is Hailuo-02's only
    ("MiniMax-Hailuo-2.3-Fast", "512P", 10),
    ("MiniMax-Hailuo-02", "2K", 6),            # H3's resolution
    ("MiniMax-Hailuo-02", "720P", 6),
    ("MiniMax-Hailuo-2.3", "768P", 8),         # V1 renders 6 or 10 s
    ("MiniMax-Hailuo-02", None, 6),            # the intake always fills a resolution
])
def test_an_undocumented_v1_video_stays_price_unknown_never_zero(
        model: str, resolution: str | None, seconds: int) -> None:
    priced = quote(model, resolution, seconds)
    assert priced.usd is None and priced.source == ""
    assert priced.unknown.startswith(UNKNOWN)


@pytest.mark.parametrize(("resolution", "seconds", "usd"), [
    ("768P", 6, 0.48), ("2K", 10, 1.3), ("768p", 15, 1.2)])
def test_minimax_h3_keeps_its_price_per_second(resolution: str | None, seconds: int,
                                               usd: float) -> None:
    assert quote("MiniMax-H3", resolution, seconds).usd == usd  # $0.08/s, $0.13/s


def test_a_sheet_of_v1_rows_is_priced_row_by_row(tmp_path: Path) -> None:
    (tmp_path / "frame.png").write_bytes(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"))
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("prompt,model,image,duration,resolution\n"
                     "a,MiniMax-Hailuo-2.3,,,\n"                   # filled: 768p, 6 s
                     "b,MiniMax-Hailuo-2.3-Fast,frame.png,10,\n"   # filled: 768p
                     "c,MiniMax-Hailuo-02,frame.png,6,512p\n"
                     "d,MiniMax-Hailuo-2.3,,6,1080p\n", encoding="utf-8")
    plan = plan_import(sheet, ImportOptions(provider="minimax", output_root=tmp_path / "v"),
                       now=1_790_000_000.0)
    assert not plan.errors
    prices = [plan.price_of(job) for job in plan.jobs]
    assert [p.usd if p else None for p in prices] == [0.28, 0.32, 0.10, 0.49]


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

@pytest.mark.parametrize("params", [
    {"model": "MiniMax-Hailuo-2.3-Fast", "duration": 10, "image": IMAGE_URL},
    {"model": "MiniMax-H3", "duration": 4, "image": IMAGE_URL}], ids=["v1", "v2"])
async def test_engine_completes_image_rows(tmp_path: Path, params: dict[str, Any]) -> None:
    """Text rows, failures, credits and unknown creates: the conformance suite."""
    fake = FakeMiniMax(v1_states=["v1_query_Success"], v2_states=["v2_task_succeeded"])
    job, _ = await run_one_row(tmp_path, fake.router, "minimax", prompt="A glass city",
                               account="mm-1", params=params)
    assert job.state is JobState.COMPLETED, job.error_message
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.rejections == []
    assert fake.creates() == 1


# -- reconciliation: NONE (docs/reconciliation/minimax.md) --------------------------------

# Every field of the documented V2 list's VideoTask (tests/fixtures/minimax/SOURCE.md, V2L).
V2_TASK_FIELDS = {"id", "model", "status", "error", "created_at", "updated_at", "content",
                  "resolution", "duration", "usage", "ratio", "task_type", "modality"}


def test_minimax_is_not_searched_and_keeps_no_client_token(client_for: ClientFor) -> None:
    """Lookup never says absent (and asks nothing): the conformance suite."""
    provider = make(client_for(Router()))
    assert getattr(provider, "supports_search", False) is False
    assert not isinstance(provider, SearchableProvider)
    assert reconcile_method(provider) is ReconcileMethod.NONE
    assert sends_client_token(provider) is False


def test_the_v2_list_echoes_neither_prompt_nor_image() -> None:
    """Why MiniMax is NONE: what the V2 list says of a task is the same for any prompt."""
    page = fixture("minimax", "v2_list_page")
    assert isinstance(page["total"], int)

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    for item in page["items"]:
        assert set(item) <= V2_TASK_FIELDS
        assert set(item.get("content") or {}) <= {"url"}  # the output, not the input
        assert not keys(item) & {"text", "prompt", "image_url", "first_frame_image"}


# -- one list read polls many V2 renders (issue 33 item 3; conformance/list_poll.py) -------

async def test_the_v2_list_poll_asks_by_task_ids_and_answers_as_the_poll(
        client_for: ClientFor) -> None:
    """One documented read (V2L: page_num, page_size, filter.task_ids repeated) for the V2
    ids only; V1 and unlisted ids are left out (each polled alone), never concluded gone."""
    router = Router()
    page = fixture("minimax", "v2_list_page")
    router.add("GET", rf"{API}/v2/query/video_generation",
               lambda request, match: json_response(200, page))
    provider = make(client_for(router))
    asked = ["v2:424635601932571", f"v1:{V1_TASK}", "v2:424635601932586",
             "v2:424635601932588", "v2:not_listed"]
    found = await provider.poll_many(asked)
    [call] = router.calls
    assert (call.method, call.url.path) == ("GET", "/v2/query/video_generation")
    assert call.url.params.multi_items() == [
        ("page_num", "1"), ("page_size", "4"), ("filter.task_ids", "424635601932571"),
        ("filter.task_ids", "424635601932586"), ("filter.task_ids", "424635601932588"),
        ("filter.task_ids", "not_listed")]
    assert set(found) == {"v2:424635601932571", "v2:424635601932586", "v2:424635601932588"}
    done, failed, running = (found[i] for i in asked if i in found)
    assert (done.phase, done.video_url) == (RemotePhase.SUCCEEDED,
                                            page["items"][0]["content"]["url"])
    assert failed.phase is RemotePhase.FAILED and failed.error is not None
    assert (failed.error.error_class, failed.error.label) == (ErrorClass.PERMANENT,
                                                              ErrorLabel.CONTENT_POLICY)
    assert (running.phase, running.sub_status) == (RemotePhase.RUNNING, "running")
    # V1 has no list: a round of V1 renders sends nothing and answers none of them.
    assert await provider.poll_many([f"v1:{V1_TASK}", "106916112212099"]) == {}
    assert len(router.calls) == 1
    # ... and the engine never asks a list for them (providers/base.py, lists_render).
    assert list_poll_of(provider, "v2:424635601932571") is provider
    assert list_poll_of(provider, f"v1:{V1_TASK}") is None
    assert list_poll_of(provider, "106916112212099") is None
