"""The mock provider as its own process: ``python -m reelqueue.mockprovider.cli``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest
from mockprovider_helpers import SAMPLE, download_all, make_provider, make_request, wait_finished

import reelqueue
from reelqueue.domain.states import RemotePhase

pytestmark = pytest.mark.integration

APP_DIR = Path(reelqueue.__file__).resolve().parents[1]


def _read_line(stream: object, timeout: float) -> str:
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline()),  # type: ignore[attr-defined]
                              daemon=True)
    reader.start()
    reader.join(timeout)
    assert line, "the mock provider printed nothing"
    return line[0]


async def test_own_process_render_survives_client() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(APP_DIR), env.get("PYTHONPATH", "")) if p
    )
    command = [sys.executable, "-m", "reelqueue.mockprovider.cli", "--port", "0",
               "--render-seconds-min", "0.3", "--render-seconds-max", "0.3", "--seed", "1",
               "--plain-video"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:
        try:
            line = _read_line(proc.stdout, timeout=10)
            assert line.startswith("mock provider listening on http://127.0.0.1:")
            url = line.rsplit(" ", 1)[1].strip()
            request = make_request(job_key="own-process")
            # One "app run" submits, then goes away while the render continues remotely.
            async with httpx2.AsyncClient(timeout=3) as client:
                render_id = await make_provider(client, url).submit(request)
            async with httpx2.AsyncClient(timeout=3) as client:
                provider = make_provider(client, url)
                assert await provider.lookup(request) == render_id
                status = await wait_finished(provider, render_id)
                assert status.phase is RemotePhase.SUCCEEDED
                assert await download_all(provider, render_id, status) == SAMPLE
                counters = (await client.get(f"{url}/_mock/counters")).json()
                assert counters["creates_by_job_key"] == {"own-process": 1}
        finally:
            proc.terminate()
            code = proc.wait(timeout=10)
        _out, err = proc.communicate()
    if os.name == "posix":
        assert code == 0, err
