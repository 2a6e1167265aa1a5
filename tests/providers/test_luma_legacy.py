"""What is Luma Dream Machine's (legacy) own: its request body and create path, its prompt
length, links-only images. The common behaviours run in conformance/test_suite.py on the
fake and facts of conformance/luma_legacy.py."""

from __future__ import annotations

import json

import pytest
from conformance.luma_legacy import GEN_ID, FakeDreamMachine, make, request
from provider_fakes import ClientFor

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.adapters import luma_legacy
from reelqueue.providers.base import RenderRequest


async def test_create_body_as_documented(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    await make(client_for(fake.router)).submit(request(
        model="ray-2", duration=9, aspect_ratio="21:9", resolution="1080p",
        image="https://img.example.test/k.jpg"))
    assert json.loads(fake.router.calls[0].body) == {
        "prompt": "A koi pond", "model": "ray-2", "aspect_ratio": "21:9", "resolution": "1080p",
        "duration": "9s",
        "keyframes": {"frame0": {"type": "image", "url": "https://img.example.test/k.jpg"}}}


async def test_local_image_is_refused_before_sending(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(image="/tmp/frame.png"))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


# -- issue 10: the current create path, prompt length, unknown outcomes, the engine -------


async def test_create_goes_to_generations_video_only(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    await make(client_for(fake.router)).submit(request())
    assert [(c.method, c.url.path) for c in fake.router.calls] == [
        ("POST", "/dream-machine/v1/generations/video")]


@pytest.mark.parametrize(("prompt", "ok"), [("ab", False), ("  a ", False), ("abc", True),
                                            ("x" * 5000, True), ("x" * 5001, False)])
async def test_prompt_is_3_to_5000_characters(client_for: ClientFor, prompt: str,
                                              ok: bool) -> None:
    fake = FakeDreamMachine()
    provider = make(client_for(fake.router))
    row = RenderRequest(job_key="row-1", client_token="tok-1", prompt=prompt, params={})
    if ok:
        assert await provider.submit(row) == GEN_ID
        assert fake.creates() == 1
    else:
        with pytest.raises(ProviderError) as caught:
            await provider.submit(row)
        assert caught.value.label is ErrorLabel.INVALID_INPUT
        assert fake.router.calls == []


def test_prompt_minimum_is_worded() -> None:
    assert luma_legacy.prompt_problems("abc") == []
    assert luma_legacy.prompt_problems("") == []  # "empty" is the spec's own problem
    assert "at least 3" in luma_legacy.prompt_problems("ab")[0]
