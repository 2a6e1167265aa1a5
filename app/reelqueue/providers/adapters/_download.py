"""Downloading a finished video: every link and redirect hop checked (https, or http on
loopback only when the API is on loopback), the key sent to the API's own host only,
redirects followed by hand, a dead link refreshed once, and the body checked while it
streams (not a text page, not empty, not truncated, not over the byte cap of
``download_limits``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers import download_limits
from reelqueue.providers.adapters._errors import host_of, retry_after_of
from reelqueue.providers.key_text import header_bytes
from reelqueue.providers.registry import is_loopback_url

if TYPE_CHECKING:
    from reelqueue.providers.adapters._client import ApiClient

MAX_REDIRECTS = 5
SNIFF_BYTES = 64
# Statuses a download link answers with once it has expired or was revoked: S3/CloudFront
# say 403, GCS says 400 (ExpiredToken) or 403, deleted objects 404/410.
DEAD_LINK_STATUSES = frozenset({400, 403, 404, 410})
# Content types that are never a video: an error page, a JSON error, an XML S3 error.
NOT_VIDEO_TYPES = ("text/", "application/json", "application/xml", "application/xhtml",
                   "application/problem+json")

LinkRefresher = Callable[[], Awaitable[str]]


class VideoDownload:
    """One download of one video through an :class:`ApiClient`'s connection.

    Attributes:
        api: the account's client (its key, its checks, its error texts).
    """

    def __init__(self, api: ApiClient, client: httpx2.AsyncClient) -> None:
        self._api = api
        self._client = client

    async def stream(
        self,
        url: str | None,
        *,
        refresh: LinkRefresher | None = None,
        send_key_to_api_host: bool = False,
        accept: str | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield the video at ``url``; on a dead link ask ``refresh`` once for a fresh one.

        Redirects are followed by hand so the key goes only to the provider's own API host
        (``send_key_to_api_host``), never to the storage host a redirect points at.
        """
        refreshed = False
        if url is None:
            if refresh is None:
                raise self._api.error("the finished job has no video link", ErrorClass.RETRYABLE,
                                 ErrorLabel.DOWNLOAD_FAILED)
            url, refreshed = await refresh(), True
        while True:
            response = await self._open_download(url, send_key_to_api_host, accept)
            try:
                if response.is_success:
                    async for chunk in self._checked_body(response):
                        yield chunk
                    return
                if refresh is None or refreshed or not self._link_is_dead(response,
                                                                           send_key_to_api_host):
                    raise self._download_status_error(response, send_key_to_api_host)
            finally:
                await response.aclose()
            url, refreshed = await refresh(), True

    def _link_is_dead(self, response: httpx2.Response, send_key_to_api_host: bool) -> bool:
        if send_key_to_api_host and self._api.is_own_origin(str(response.url)) and (
            response.status_code == 401
        ):
            return False  # our key was refused: a fresh link will not help
        return response.status_code in DEAD_LINK_STATUSES

    def _download_status_error(
        self, response: httpx2.Response, send_key_to_api_host: bool
    ) -> ProviderError:
        status = response.status_code
        if send_key_to_api_host and self._api.is_own_origin(str(response.url)) and status == 401:
            return self._api.http_error(response, what="download")
        dead = " (link expired or revoked)" if status in DEAD_LINK_STATUSES else ""
        return self._api.error(
            f"download failed: HTTP {status} from {host_of(response.url)}{dead}",
            ErrorClass.RETRYABLE,
            ErrorLabel.DOWNLOAD_FAILED,
            retry_after=retry_after_of(response),
            status_code=status,
        )

    async def _open_download(
        self, url: str, send_key_to_api_host: bool, accept: str | None
    ) -> httpx2.Response:
        for _ in range(MAX_REDIRECTS + 1):
            self._check_download_url(url)
            # Identity: a compressed body could decode to far more than it announced (a
            # gzip bomb). A server that compresses anyway is still counted decoded.
            headers: dict[str, str] = {"Accept-Encoding": "identity"}
            if accept:
                headers["Accept"] = accept
            if send_key_to_api_host and self._api.is_own_origin(url):
                headers.update(self._api.auth())
            try:
                request = self._client.build_request(
                    "GET", url, headers=header_bytes(headers))
            except httpx2.InvalidURL:
                raise self._not_an_address() from None
            try:
                response = await self._client.send(request, stream=True, follow_redirects=False)
            except httpx2.HTTPError as exc:
                raise self._download_transport_error(exc) from exc
            if not response.is_redirect:
                return response
            location = response.headers.get("location", "")
            await response.aclose()
            try:
                url = urljoin(url, location)
            except ValueError:
                raise self._not_an_address() from None
        raise self._api.error("download failed: too many redirects", ErrorClass.RETRYABLE,
                         ErrorLabel.DOWNLOAD_FAILED)

    def _not_an_address(self) -> ProviderError:
        """A link (or a redirect's) that cannot be read as an address: nothing is fetched;
        a download failure, so the render's link is read again before the job gives up."""
        return self._api.error("refusing to download from a link that is not a valid "
                               "address", ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)

    def _check_download_url(self, url: str) -> None:
        """Every link and every redirect hop: https, or plain http to loopback only when
        the API itself is on loopback (a fake or the local mock)."""
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - read to refuse a port out of range now, not mid-fetch
        except ValueError:
            raise self._not_an_address() from None
        if parts.scheme == "https" and parts.hostname:
            return
        if parts.scheme == "http" and is_loopback_url(url) and is_loopback_url(self._api.base_url):
            return
        raise self._api.error(
            f"refusing to download from a non-https link ({parts.scheme or 'no'} scheme)",
            ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
        )

    async def _checked_body(self, response: httpx2.Response) -> AsyncIterator[bytes]:
        content_type = response.headers.get("content-type", "").lower()
        if content_type.startswith(NOT_VIDEO_TYPES):
            raise self._api.error(
                f"download failed: got {content_type.split(';')[0]} instead of a video "
                f"from {host_of(response.url)}",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
                status_code=response.status_code,
            )
        limits = download_limits.current_limits()
        expected = response.headers.get("content-length")
        if expected and expected.isdigit() and int(expected) > limits.max_bytes:
            raise self._too_large(limits, int(expected))
        received = 0
        held = b""  # the first bytes, kept back until they are known not to be a text page
        sniffed = False
        try:
            async for chunk in response.aiter_bytes():
                if not chunk:
                    continue
                received += len(chunk)  # decoded bytes, whatever the Content-Encoding
                if received > limits.max_bytes:
                    raise self._too_large(limits)
                if sniffed:
                    yield chunk
                    continue
                held += chunk
                if len(held) >= SNIFF_BYTES:
                    self._sniff(held, response)
                    sniffed = True
                    yield held
                    held = b""
        except httpx2.HTTPError as exc:
            raise self._download_transport_error(exc) from exc
        if held:
            # The whole body was shorter than the sniff window.
            self._sniff(held, response)
            yield held
        if received == 0:
            raise self._api.error("download failed: the provider sent an empty file",
                             ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)
        encoding = response.headers.get("content-encoding", "identity").lower()
        # Content-Length counts encoded bytes; only an unencoded body can be compared.
        if expected and expected.isdigit() and encoding == "identity" and int(expected) != received:
            raise self._api.error(
                f"download truncated: got {received} of {expected} bytes",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
            )

    def _too_large(self, limits: download_limits.DownloadLimits,
                   announced: int | None = None) -> ProviderError:
        reason = download_limits.too_large(limits, announced)
        return self._api.error(str(reason), reason.error_class, reason.label)

    def _sniff(self, head: bytes, response: httpx2.Response) -> None:
        start = head.lstrip()[:1]
        if start in (b"<", b"{", b"["):
            raise self._api.error(
                f"download failed: got a text page instead of a video from "
                f"{host_of(response.url)}",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
                status_code=response.status_code,
            )

    def _download_transport_error(self, exc: httpx2.HTTPError) -> ProviderError:
        return self._api.error(
            f"download failed: {type(exc).__name__}", ErrorClass.RETRYABLE,
            ErrorLabel.DOWNLOAD_FAILED,
        )
