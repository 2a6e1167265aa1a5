"""Bounds on one video download: a byte cap, a deadline and a throughput floor.

A provider (or a compromised CDN) decides how many bytes it sends and how fast; without
bounds it can fill the disk (a huge body, a gzip bomb) or hold a render slot forever (one
byte every 25 s). :func:`bounded` wraps any adapter's chunk stream and ends it with a
retryable ``DOWNLOAD_FAILED`` error when it passes a bound, so the engine keeps the render
and downloads it again later instead of rendering (and paying) again.

The limits in force are also published in a context variable while the engine writes a
video (:func:`using_limits`), so an adapter can refuse a ``Content-Length`` above the cap
before a single byte is read (``ApiClient.stream_video``). Async generators run in the
context of whoever iterates them, which is the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError

GIB = 1024**3
KIB = 1024


@dataclass(frozen=True)
class DownloadLimits:
    """Attributes:
    max_bytes: the most bytes one video may have on disk (decoded bytes are counted).
    deadline_seconds: the longest one download may take, start to end.
    min_bytes_per_second: the throughput floor, averaged over ``floor_window_seconds``;
        0 switches the floor off.
    floor_window_seconds: the length of each window the floor is checked over.
    """

    max_bytes: int = 2 * GIB
    deadline_seconds: float = 30 * 60.0
    min_bytes_per_second: float = 8 * KIB
    floor_window_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.max_bytes <= 0 or self.deadline_seconds <= 0 or self.floor_window_seconds <= 0:
            raise ValueError("download limits must be positive")
        if self.min_bytes_per_second < 0:
            raise ValueError("the download throughput floor cannot be negative")


DEFAULT_LIMITS = DownloadLimits()
_current: ContextVar[DownloadLimits] = ContextVar("reelqueue_download_limits",
                                                  default=DEFAULT_LIMITS)


def current_limits() -> DownloadLimits:
    """The limits of the download being written now (the defaults outside one)."""
    return _current.get()


@contextlib.contextmanager
def using_limits(limits: DownloadLimits) -> Iterator[None]:
    token = _current.set(limits)
    try:
        yield
    finally:
        _current.reset(token)


def download_failed(text: str) -> ProviderError:
    """A retryable download failure: the render is kept and downloaded again later."""
    return ProviderError(text, error_class=ErrorClass.RETRYABLE,
                         label=ErrorLabel.DOWNLOAD_FAILED)


def too_large(limits: DownloadLimits, announced: int | None = None) -> ProviderError:
    said = f" (the server announced {announced} bytes)" if announced is not None else ""
    return download_failed(
        f"download refused: the video is larger than the {_size(limits.max_bytes)} cap"
        f"{said}; raise the download size limit if the provider's videos are this big")


async def bounded(chunks: AsyncIterator[bytes], limits: DownloadLimits
                  ) -> AsyncGenerator[bytes, None]:
    """Yield ``chunks`` until they end or pass a bound; then close the source and raise.

    The wait for each chunk is itself bounded (by the deadline and by the end of the
    current floor window), so a server that sends nothing at all is cut off too. A chunk
    that would take the total over ``max_bytes`` is never yielded, so no more than the cap
    reaches the disk.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.deadline_seconds
    floor = limits.min_bytes_per_second
    window = limits.floor_window_seconds
    needed = floor * window  # bytes each window must bring
    window_end = loop.time() + window
    window_bytes = 0
    total = 0
    iterator = aiter(chunks)
    try:
        while True:
            wake = deadline
            if floor > 0:
                # When this window already has its bytes, the next one is the one at risk.
                wake = min(wake, window_end if window_bytes < needed else window_end + window)
            timer = asyncio.timeout_at(wake)
            try:
                async with timer:
                    chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if not timer.expired():
                    raise
                # The source was cancelled mid-read: it cannot go on, so this always ends
                # the download (the wake-up time is only ever a certain failure).
                if wake >= deadline:
                    raise _too_long(limits, total) from None
                raise _too_slow(limits, window_bytes if window_bytes < needed else 0) \
                    from None
            now = loop.time()
            if now >= deadline:
                raise _too_long(limits, total)
            if floor > 0:
                while now >= window_end:
                    if window_bytes < needed:
                        raise _too_slow(limits, window_bytes)
                    window_end, window_bytes = window_end + window, 0
            total += len(chunk)
            window_bytes += len(chunk)
            if total > limits.max_bytes:
                raise too_large(limits)
            if chunk:
                yield chunk
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def _too_long(limits: DownloadLimits, received: int) -> ProviderError:
    return download_failed(
        f"download took longer than {_duration(limits.deadline_seconds)} ({received} bytes "
        "received); it is tried again later without rendering again")


def _too_slow(limits: DownloadLimits, window_bytes: int) -> ProviderError:
    rate = window_bytes / limits.floor_window_seconds
    return download_failed(
        f"download too slow: {rate / KIB:.2f} KiB/s over "
        f"{_duration(limits.floor_window_seconds)} (the floor is "
        f"{limits.min_bytes_per_second / KIB:g} KiB/s); it is tried again later without "
        "rendering again")


def _size(count: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", 1024**2), ("KiB", KIB)):
        if count >= size:
            return f"{count / size:g} {unit}"
    return f"{count} bytes"


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"
