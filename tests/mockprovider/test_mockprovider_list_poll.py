"""The mock adapter's ``poll_many`` against the real mock server (issue 33 item 3): one
list read answers many renders, each read as its own poll reads it; a render the list
does not show yet is left out (the engine polls it on its own); a server without the
list says so and the adapter stops offering it."""

from __future__ import annotations

import dataclasses

import httpx2
import pytest
from mockprovider_helpers import FAST, make_provider, make_request, wait_finished

from reelqueue.domain.errors import ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.mockprovider import MockProviderServer
from reelqueue.providers.base import list_poll_of

pytestmark = pytest.mark.integration


def _same(a: object, b: object) -> bool:
    """Two answers alike but for the hint (a list and a poll are different requests)."""
    return dataclasses.replace(a, poll_after=None) == dataclasses.replace(  # type: ignore[type-var]
        b, poll_after=None)


async def test_one_list_read_answers_many_renders_as_their_polls_do(
        mp_client: httpx2.AsyncClient, mp_server: MockProviderServer) -> None:
    provider = make_provider(mp_client, mp_server.url)
    assert list_poll_of(provider) is provider
    ids = [await provider.submit(make_request(f"shot {i}", f"job-{i}")) for i in range(5)]
    before = mp_server.counters()
    found = await provider.poll_many([*ids, "r_not_there"])
    after = mp_server.counters()
    assert after["lists_total"] - before["lists_total"] == 1
    assert after.get("polls_total", 0) == before.get("polls_total", 0)
    assert set(found) == set(ids), "only the ids it found; an unknown id is left out"
    for render_id in ids:
        assert found[render_id].phase in (RemotePhase.QUEUED, RemotePhase.RUNNING,
                                          RemotePhase.SUCCEEDED)
    finished = {render_id: await wait_finished(provider, render_id) for render_id in ids}
    listed = await provider.poll_many(ids)
    assert set(listed) == set(ids)
    for render_id in ids:
        assert listed[render_id].phase is RemotePhase.SUCCEEDED
        assert listed[render_id].video_url and listed[render_id].cost
        assert _same(listed[render_id], finished[render_id])
        assert listed[render_id].poll_after == finished[render_id].poll_after


async def test_a_render_not_listed_yet_is_left_out(mp_client: httpx2.AsyncClient) -> None:
    options = dataclasses.replace(FAST, list_delay_min=30.0, list_delay_max=30.0)
    with MockProviderServer(options) as server:
        provider = make_provider(mp_client, server.url)
        render_id = await provider.submit(make_request())
        assert await provider.poll_many([render_id]) == {}
        assert (await provider.poll(render_id)).phase in (RemotePhase.QUEUED,
                                                          RemotePhase.RUNNING,
                                                          RemotePhase.SUCCEEDED)


async def test_a_server_without_the_list_raises_and_is_polled_one_by_one(
        mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, list_enabled=False)) as server:
        provider = make_provider(mp_client, server.url)
        render_id = await provider.submit(make_request())
        with pytest.raises(ProviderError) as raised:
            await provider.poll_many([render_id])
        assert raised.value.status_code == 404
        assert list_poll_of(provider) is None


async def test_status_lists_leave_out_renders_steered_by_poll_faults(
        mp_client: httpx2.AsyncClient, mp_server: MockProviderServer) -> None:
    provider = make_provider(mp_client, mp_server.url)
    plain = await provider.submit(make_request("a plain shot", "job-plain"))
    faulty = await provider.submit(make_request("a shot [[mock:poll_malformed*1]]", "job-f"))
    assert set(await provider.poll_many([plain, faulty])) == {plain}
    # The search's list (no ``with=status``) still shows both, in its own shape.
    page = (await mp_client.get(f"{mp_server.url}/v1/renders")).json()
    records = {record["id"]: record for record in page["data"]}
    assert {plain, faulty} <= records.keys()
    assert not {"progress", "video_url", "cost", "error"} & set(records[plain])
