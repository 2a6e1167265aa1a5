"""What it takes to serve the HTTP API, shared by the front ends that start it: the
command line's ``reelqueue serve`` parses its options into :class:`ServeOptions` and calls
the runner that :mod:`reelqueue.entry` gives it (front ends never import each other).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reelqueue.application.context import AppContext
from reelqueue.domain.errors import InputError
from reelqueue.engine.config import EngineConfig

__all__ = ["DEFAULT_LISTEN", "ApiRunner", "ServeOptions", "check_options", "is_loopback",
           "parse_listen"]

DEFAULT_LISTEN = "127.0.0.1:8443"


@dataclass(frozen=True)
class ServeOptions:
    """Attributes:
    host, port: where to listen (port 0: any free port; the chosen one is printed).
    tls: False only on loopback (checked by :func:`check_listen`).
    cert, key: the user's certificate and key (None: a self-signed one in the data folder).
    key_insecure_ok: serve a key file that group or others can read (POSIX), else refused.
    max_waiting: submits get 429 while this many jobs wait.
    paused: start with the pump paused.
    engine: the engine's settings.
    connections: the API's connection limits given (``reelqueue serve --max-connections``
      and the like: api/connections.py's ``ConnectionLimits`` field names); the others
      keep their defaults.
    """

    host: str
    port: int
    tls: bool = True
    cert: Path | None = None
    key: Path | None = None
    key_insecure_ok: bool = False
    max_waiting: int = 100_000
    paused: bool = False
    engine: EngineConfig = field(default_factory=EngineConfig)
    connections: dict[str, int | float] = field(default_factory=dict)


class ApiRunner(Protocol):
    def __call__(self, ctx: AppContext, options: ServeOptions) -> int: ...


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise InputError(f"--listen {text!r}: use HOST:PORT, e.g. {DEFAULT_LISTEN}.")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_options(options: ServeOptions) -> None:
    if not options.tls and not is_loopback(options.host):
        raise InputError(f"{options.host} is not a loopback address: serving it needs TLS "
                         "(drop --no-tls; a self-signed certificate is made if none is given).")
    if (options.cert is None) != (options.key is None):
        raise InputError("--tls-cert and --tls-key go together.")
    if options.max_waiting < 1:
        raise InputError("--max-waiting must be at least 1.")
