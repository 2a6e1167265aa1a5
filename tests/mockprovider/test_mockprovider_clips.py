"""The mock renders a clip of each prompt and seed (issue 35 item 6): different prompts give
different videos, the same prompt and seed the same bytes, made once and kept in the mock's
folder; ``prompt_clips=False`` (``--plain-video``) serves the sample as before."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import time
from pathlib import Path
from typing import Any

import av
import httpx2
from mockprovider_helpers import FAST, SAMPLE

from reelqueue.mockprovider import MockProviderServer
from reelqueue.mockprovider.cli import add_arguments, options_from_args
from reelqueue.mockprovider.clips import ClipCache, render_clip


def _video(client: httpx2.Client, url: str, prompt: str, seed: int, n: int) -> bytes:
    body = {"prompt": prompt, "client_token": f"t{n}", "job_key": f"j{n}",
            "params": {"seed": seed}}
    render = client.post(f"{url}/v1/renders", json=body).json()
    deadline = time.monotonic() + 5
    while True:
        state: dict[str, Any] = client.get(f"{url}/v1/renders/{render['id']}").json()
        if state["status"] == "succeeded":
            return client.get(state["video_url"]).content
        assert time.monotonic() < deadline, state["status"]
        time.sleep(0.01)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_each_prompt_and_seed_has_its_own_clip_made_once(tmp_path: Path) -> None:
    options = dataclasses.replace(FAST, prompt_clips=True, clip_dir=tmp_path / "clips")
    with MockProviderServer(options) as server, httpx2.Client(timeout=5) as client:
        fox = _video(client, server.url, "a red fox in the snow", 1, 1)
        city = _video(client, server.url, "a city at night in the rain", 1, 2)
        fox_again = _video(client, server.url, "a red fox in the snow", 1, 3)
        fox_seed2 = _video(client, server.url, "a red fox in the snow", 2, 4)
        counters = client.get(f"{server.url}/_mock/counters").json()
    assert len({_sha(fox), _sha(city), _sha(fox_seed2)}) == 3
    assert fox_again == fox and SAMPLE not in (fox, city)
    assert all(len(clip) <= 50 * 1024 for clip in (fox, city, fox_seed2))
    assert counters["creates_total"] == 4 and counters["downloads_total"] == 4
    kept = sorted((tmp_path / "clips").glob("*.mp4"))
    assert len(kept) == 3
    with av.open(str(kept[0])) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == (160, 90)
        assert stream.frames == 24
    # A new mock on the same folder reads the clip instead of making it again; a clip made
    # anew is byte for byte the same.
    cache = ClipCache(tmp_path / "clips")
    assert cache.clip("a red fox in the snow", 1) == fox and cache.made == 0
    assert render_clip("a red fox in the snow", 1) == fox


def test_plain_video_serves_the_sample(tmp_path: Path) -> None:
    args = _args("--plain-video", "--clip-dir", str(tmp_path))
    options = options_from_args(args)
    assert not options.clips_wanted
    fast = dataclasses.replace(options, render_seconds_min=0.01, render_seconds_max=0.02)
    with MockProviderServer(fast) as server, httpx2.Client(timeout=5) as client:
        assert _video(client, server.url, "a red fox", 1, 1) == SAMPLE
    assert not list(tmp_path.iterdir())
    assert options_from_args(_args()).clips_wanted


def test_a_folder_that_cannot_be_written_still_gives_clips(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a folder")
    cache = ClipCache(blocker / "clips")
    first = cache.clip("fox", 3)
    assert first is not None and cache.clip("fox", 3) == first and cache.made == 1
