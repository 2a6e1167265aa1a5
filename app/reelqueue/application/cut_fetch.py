"""``reelqueue cut --from-api URL``: a picked take held by another machine of the team,
brought here through that machine's API (``GET /v1/jobs/{id}/video``, a ``read`` token).

Hostile boundary: the answer is bounded by the size the journal recorded (and a deadline),
written to a temporary name and renamed only when its sha256 is the journal's.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import time
from pathlib import Path

import httpx2

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Job

__all__ = ["TOKEN_VARIABLE", "ApiFetcher"]

TOKEN_VARIABLE = "REELQUEUE_API_TOKEN"
#: one take's download is cut off after this long
DEADLINE_SECONDS = 600.0
MAX_BYTES = 4 << 30


class ApiFetcher:
    """Fetches takes from one API (a :data:`~reelqueue.application.cut.Fetcher`).

    Attributes:
        base_url: the API's address (``https://host:8765``).
    """

    def __init__(self, base_url: str, token: str | None,
                 transport: httpx2.BaseTransport | None = None,
                 certificate: Path | None = None) -> None:
        """``certificate``: the API's own (self-signed) certificate to trust, as
        ``reelqueue serve`` writes it in its data folder (None: the system's CAs)."""
        if not base_url.startswith(("http://", "https://")):
            raise InputError(f"--from-api takes the API's address (https://host:port), not "
                             f"{base_url!r}.")
        verify: bool | ssl.SSLContext = True
        if certificate is not None:
            try:
                verify = ssl.create_default_context(cafile=str(certificate))
            except (OSError, ssl.SSLError) as exc:
                raise InputError(f"The certificate {certificate} cannot be read ({exc}).") \
                    from exc
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx2.Client(headers=headers, transport=transport, verify=verify,
                                     timeout=httpx2.Timeout(60.0, connect=15.0))

    def close(self) -> None:
        self._client.close()

    def __call__(self, job: Job, target: Path) -> None:
        url = f"{self.base_url}/v1/jobs/{job.id}/video"
        ceiling = min(job.output_size or MAX_BYTES, MAX_BYTES)
        partial = target.with_name(f".{target.name}.part")
        digest = hashlib.sha256()
        started = time.monotonic()
        try:
            with self._client.stream("GET", url) as answer:
                if answer.status_code != 200:
                    raise InputError(f"{self.base_url} did not give the video of job "
                                     f"{job.id} (HTTP {answer.status_code}); "
                                     + _hint(answer.status_code))
                got = 0
                with partial.open("wb") as handle:
                    for chunk in answer.iter_bytes():
                        got += len(chunk)
                        if got > ceiling:
                            raise InputError(f"{self.base_url} sent more than the "
                                             f"{ceiling} bytes job {job.id}'s video has.")
                        if time.monotonic() - started > DEADLINE_SECONDS:
                            raise InputError(f"The video of job {job.id} took longer than "
                                             f"{DEADLINE_SECONDS:.0f} s to fetch.")
                        digest.update(chunk)
                        handle.write(chunk)
            if digest.hexdigest() != job.output_sha256:
                raise InputError(f"The video of job {job.id} from {self.base_url} is not the "
                                 "one the journal recorded (sha256 differs).")
            os.replace(partial, target)
        except httpx2.HTTPError as exc:
            raise InputError(f"{self.base_url} could not be reached for job {job.id} "
                             f"({type(exc).__name__}).") from exc
        finally:
            partial.unlink(missing_ok=True)


def _hint(status: int) -> str:
    if status in (401, 403):
        return f"put a token with the read scope of that machine in {TOKEN_VARIABLE}."
    if status == 409:
        return "that machine does not hold it either: give the API of the machine that does."
    return "check the address and that the machine runs 'reelqueue serve'."
