"""A TLS connection flood without a token, for tests/api/test_trust_flood.py, run as its
own process (``python -m tests.api.tls_flood PORT SIZE SECONDS ADDRESS...``) so that its
handshakes do not share the test's interpreter: SIZE connections to 127.0.0.1:PORT,
spread over the loopback ADDRESSes, each completing TLS (no certificate check, no
request) and re-opened as soon as it closes, for SECONDS. At most ``IN_FLIGHT``
handshakes at once (under the server's handshake cap, so the flood fills the connection
cap instead of evicting its own handshakes). Prints ``ramped`` once every connection made
its first attempt, then one JSON line of counts at the end: attempts, handshakes
(completed), refused (closed or failed before or during the handshake), dropped (ended
after its handshake with an EOF or an error, whether the server closed it or the run's
end did: a figure, not asserted)."""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time

IN_FLIGHT = 48


class _Ramp:
    def __init__(self, size: int) -> None:
        self.left = size

    def attempted(self) -> None:
        self.left -= 1
        if self.left == 0:
            print("ramped", flush=True)


async def _hold(port: int, address: str, context: ssl.SSLContext, until: float,
                counts: dict[str, int], gate: asyncio.Semaphore, ramp: _Ramp) -> None:
    loop = asyncio.get_running_loop()
    first = True
    while loop.time() < until:
        counts["attempts"] += 1
        try:
            async with gate:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(
                    "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1",
                    local_addr=(address, 0), ssl_handshake_timeout=10), 15)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError):
            counts["refused"] += 1
            if first:
                first = False
                ramp.attempted()
            await asyncio.sleep(0.001)  # the loop runs the others; then again at once
            continue
        counts["handshakes"] += 1
        if first:
            first = False
            ramp.attempted()
        try:
            await asyncio.wait_for(reader.read(1), max(0.0, until - loop.time()))
            counts["dropped"] += 1
        except (OSError, ssl.SSLError):
            counts["dropped"] += 1
        except TimeoutError:
            pass  # held to the end
        finally:
            writer.transport.abort()


async def flood(port: int, size: int, seconds: float, addresses: list[str]) -> dict[str, int]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    counts = {"attempts": 0, "handshakes": 0, "refused": 0, "dropped": 0}
    until = asyncio.get_running_loop().time() + seconds
    gate, ramp = asyncio.Semaphore(IN_FLIGHT), _Ramp(size)
    await asyncio.gather(*(_hold(port, addresses[i % len(addresses)], context, until,
                                 counts, gate, ramp) for i in range(size)))
    return counts


def main(argv: list[str]) -> int:
    port, size, seconds = int(argv[0]), int(argv[1]), float(argv[2])
    started = time.monotonic()
    counts = asyncio.run(flood(port, size, seconds, argv[3:]))
    counts["seconds"] = round(time.monotonic() - started, 1)  # type: ignore[assignment]
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
