"""fal: finding a create whose answer was lost in fal's request history (the fake:
conformance/fal_search.py). The behaviours every search shares run in
conformance/test_search.py."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import httpx2
import pytest
from conformance.fal_search import (
    LIST,
    MAX_RENDER,
    PARAMS,
    PNG,
    T0,
    FalHistory,
    iso,
    make,
    parse_iso,
    request,
)
from provider_fakes import ClientFor, fixture, json_response

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.adapters import fal
from reelqueue.providers.base import ReconcileMethod, reconcile_method


async def test_a_lost_create_is_found_once_fal_lists_it(client_for: ClientFor) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    wanted = request(**PARAMS)
    # Another client on the same key rendered the same prompt before and renders it after.
    history.add("fal-ai/veo3.1/fast", fal._body("fal-ai/veo3.1/fast", wanted, None),
                T0 - 7200, T0 - 7000)
    history.now = T0 + 5
    job_id = await provider.submit(wanted)  # its answer is "lost": only search knows it
    sent = history.now
    history.now += 60
    other = history.add("fal-ai/veo3.1/fast", fal._body("fal-ai/veo3.1/fast", wanted, None),
                        history.now, history.now + 30)
    since, until = T0, sent + 1

    early = await provider.search(since, until)  # still rendering: not listed yet
    assert job_id not in {r.provider_job_id for r in early.records}
    assert early.complete is False  # never "none": in-flight requests may be omitted

    history.now = sent + provider.settle_seconds
    assert provider.settle_seconds >= MAX_RENDER
    found = await provider.search(since, until)
    assert found.complete is False
    mine = [r for r in found.records if r.echo == provider.echo(wanted)]
    assert {r.provider_job_id for r in mine} == {job_id, f"fal-ai/veo3.1/requests/{other}"}
    record = next(r for r in mine if r.provider_job_id == job_id)
    assert record.created_at == pytest.approx(sent, abs=1)
    assert record.status == "COMPLETED (HTTP 200)"
    # Only the one created inside the window is ours by time (the engine's rule).
    assert [r.provider_job_id for r in mine
            if r.created_at is not None and since <= r.created_at <= until] == [job_id]


async def test_the_list_asks_for_our_models_with_payloads_from_since(
    client_for: ClientFor,
) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    await provider.search(T0 - 3600.7, T0)
    (url,) = history.list_calls()
    assert url.params["endpoint_id"].split(",") == list(fal.PARAMS.models)
    assert url.params["start"] == iso(T0 - 3601)  # rounded down: the boundary is kept
    assert url.params["expand"] == "payloads"
    assert url.params["limit"] == "100"
    assert "end" not in url.params  # a render that ends after `until` is still read


@pytest.mark.parametrize("count", [0, 1, 100, 250])
async def test_paging_follows_the_cursor_to_the_last_page(
    client_for: ClientFor, count: int,
) -> None:
    history = FalHistory()
    for n in range(count):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 600 + n, T0 - 300 + n)
    result = await make(client_for(history.router)).search(T0 - 3600, T0)
    assert len(result.records) == count
    assert len({r.provider_job_id for r in result.records}) == count
    assert len(history.list_calls()) == max(1, -(-count // 100))
    assert [c.params.get("cursor") for c in history.list_calls()][1:] == [
        base64.b64encode(str(p).encode()).decode() for p in range(2, -(-count // 100) + 1)]
    assert result.complete is False


async def test_the_recorded_pages_read_as_records(client_for: ClientFor) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, json_response(200, fixture("fal", "list_page_1")))
    history.router.script("GET", LIST, json_response(200, fixture("fal", "list_page_2")))
    provider = make(client_for(history.router))
    result = await provider.search(parse_iso("2026-11-03T09:00:00Z"), T0)
    assert history.list_calls()[1].params["cursor"] == "Mg=="
    first, no_payload, on_fal_storage, older = result.records
    assert first.provider_job_id == "fal-ai/veo3.1/requests/0b9e3c4a-5d1f-4a8e-9c2b-7e6f5a4d3c21"
    assert first.created_at == parse_iso("2026-11-03T10:01:58Z")
    assert first.status == "COMPLETED (HTTP 200)"
    assert first.echo == provider.echo(request(
        "A lighthouse in a storm, slow dolly in", model="fal-ai/veo3.1/fast", duration=6,
        aspect_ratio="16:9"))
    assert no_payload.echo is None  # payload storage off: never ruled out
    assert on_fal_storage.echo is None  # maybe fal's copy of an inline image
    assert on_fal_storage.status == "COMPLETED (HTTP 422)"
    assert older.echo == provider.echo(request(
        "A lighthouse in a storm, slow dolly in", model="fal-ai/veo3.1", duration=8,
        aspect_ratio="16:9", seed=42, audio=True))
    assert older.echo != first.echo


def test_echo_differs_for_every_parameter_the_create_sets() -> None:
    provider = make(httpx2.AsyncClient())
    base = provider.echo(request(**PARAMS))
    assert base == {"model": "fal-ai/veo3.1/fast", "input": {
        "prompt": "A glass city at dawn", "generate_audio": False, "aspect_ratio": "9:16",
        "duration": "6s", "seed": 11}}
    # A spreadsheet's 6.0 or "6" is the same create.
    assert provider.echo(request(**{**PARAMS, "duration": "6.0", "seed": 11.0})) == base
    variants = [
        request("A glass city at dusk", **PARAMS),
        request(**{**PARAMS, "model": "fal-ai/veo3.1"}),
        request(**{**PARAMS, "duration": 8}),
        request(**{**PARAMS, "aspect_ratio": "16:9"}),
        request(**{**PARAMS, "seed": 12}),
        request(**{**PARAMS, "resolution": "1080p"}),
        request(**{**PARAMS, "negative_prompt": "blur"}),
        request(**{**PARAMS, "audio": True}),
        request(**{key: value for key, value in PARAMS.items() if key != "seed"}),
    ]
    echoes = [provider.echo(v) for v in variants]
    assert all(e != base for e in echoes)
    assert len({json.dumps(e, sort_keys=True) for e in echoes}) == len(echoes)


async def test_images_are_compared_by_url_or_by_their_bytes(
    client_for: ClientFor, tmp_path: Path,
) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    picture = tmp_path / "first.png"
    picture.write_bytes(PNG)
    model = "fal-ai/veo3.1/image-to-video"
    rows = [
        request(model=model, image="https://img.example.test/a.png"),
        request(model=model, image=f"data:image/png;base64,{base64.b64encode(PNG).decode()}"),
        request(model=model, image=str(picture)),
        request(model=model, image=str(picture),
                image_sha256=hashlib.sha256(PNG).hexdigest()),
    ]
    jobs = []
    for row in rows:
        jobs.append(await provider.submit(row))
        history.now += 1
    history.now += provider.settle_seconds
    result = await provider.search(T0, history.now)
    by_id = {r.provider_job_id: r for r in result.records}
    for row, job in zip(rows, jobs, strict=True):
        assert by_id[job].echo == provider.echo(row)
    # The same bytes, however given, are the same image; another image is not.
    assert provider.echo(rows[1]) == provider.echo(rows[2]) == provider.echo(rows[3])
    assert provider.echo(rows[0]) != provider.echo(rows[1])
    other = request(model=model, image="data:image/png;base64,"
                    + base64.b64encode(PNG + b"x").decode())
    assert provider.echo(other) != provider.echo(rows[1])


async def test_a_gateway_account_never_sends_its_key_to_fal(client_for: ClientFor) -> None:
    history = FalHistory()
    provider = make(client_for(history.router), base_url="https://fal-gateway.example.test")
    assert provider.supports_search is False
    assert reconcile_method(provider) is ReconcileMethod.NONE
    with pytest.raises(ProviderError) as caught:
        await provider.search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert history.router.calls == []
