"""``reelqueue mock-provider``: run the mock provider as its own process.

Also runnable directly: ``python -m reelqueue.mockprovider.cli --port 0``. It prints
``mock provider listening on http://127.0.0.1:PORT`` (flushed) once it listens, then
serves until SIGTERM or SIGINT (Ctrl+C).

The list of the account's renders (what a ``reconcile: search`` account reads): its page
size ``--page-size N`` (default 20), the delay before a new render is listed
``--list-delay MIN MAX`` seconds (seeded by ``--seed``; default 0 0), ``--no-list`` to
switch it off (404 ``list_disabled``, like a gateway without a list). ``--foreign JSON``
(repeatable) plants another client's render at start, e.g.
``--foreign '{"prompt": "a fox", "params": {"duration": 4}, "ago": 30}'``.
``--hold-create-answer S`` holds every create's answer S seconds after the render exists.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reelqueue.mockprovider.options import ForeignRender, MockOptions
from reelqueue.mockprovider.server import serve_forever

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the mock provider's options to ``parser``."""
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="loopback address to listen on (127.0.0.1 or ::1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for render times and random faults")
    parser.add_argument("--render-seconds-min", type=float, default=0.2, metavar="S")
    parser.add_argument("--render-seconds-max", type=float, default=2.0, metavar="S")
    parser.add_argument("--fail-rate", type=float, default=0.0, metavar="P",
                        help="probability that a render fails")
    parser.add_argument("--rate-limit-rate", type=float, default=0.0, metavar="P",
                        help="probability that a create answers 429")
    parser.add_argument("--server-error-rate", type=float, default=0.0, metavar="P",
                        help="probability that a create answers 500")
    parser.add_argument("--retry-after", type=float, default=1.0, metavar="S",
                        help="Retry-After seconds sent with a 429")
    parser.add_argument("--no-lookup", action="store_true",
                        help="refuse lookups by client token (like most real providers)")
    parser.add_argument("--accept-key", action="append", default=None, metavar="KEY",
                        help="accept only this API key (repeatable; default: any key)")
    parser.add_argument("--download-delay", type=float, default=0.0, metavar="S",
                        help="seconds between 1 KiB download chunks")
    parser.add_argument("--link-ttl", type=float, default=None, metavar="S",
                        help="download links expire after S seconds (default: never)")
    parser.add_argument("--video", type=Path, default=None,
                        help="MP4 served for every render (default: a clip of each "
                             "render's prompt and seed, else the bundled sample)")
    parser.add_argument("--plain-video", action="store_true",
                        help="serve the bundled sample for every render instead of a clip "
                             "of its prompt")
    parser.add_argument("--clip-dir", type=Path, default=None, metavar="FOLDER",
                        help="where the clips of prompts are kept (default: the user's "
                             "cache folder)")
    parser.add_argument("--no-list", action="store_true",
                        help="refuse to list the account's renders (404 list_disabled)")
    parser.add_argument("--page-size", type=int, default=20, metavar="N",
                        help="records per list page when the client gives no limit "
                             "(default 20, at most 100)")
    parser.add_argument("--list-delay", type=float, nargs=2, default=(0.0, 0.0),
                        metavar=("MIN", "MAX"),
                        help="a new render is listed only after a delay drawn from "
                             "[MIN, MAX] seconds (seeded; default 0 0)")
    parser.add_argument("--foreign", action="append", default=None, metavar="JSON",
                        type=_foreign,
                        help='plant another client\'s render: {"prompt": ..., "params": '
                             '{...}, "ago": S} or "created_at": UNIX (repeatable)')
    parser.add_argument("--poll-after", type=float, default=0.2, metavar="S",
                        help="the X-Poll-After hint of every poll answer (default 0.2; "
                             "real providers ask for about 5)")
    parser.add_argument("--no-hint", action="store_true",
                        help="poll answers carry no X-Poll-After hint")
    parser.add_argument("--no-progress", action="store_true",
                        help="a running render's poll answer carries no progress")
    parser.add_argument("--hold-create-answer", type=float, default=0.0, metavar="S",
                        help="hold every create's answer S seconds (the render exists)")
    parser.add_argument("--account-view", default=None, metavar="JSON", type=_account_view,
                        help='the body GET /v1/account/view answers, as given: {"balance": '
                             '{"amount": N, "unit": "credits"}, "organization_id": ..., '
                             '"models": {"mock-1": {"concurrency": N, "daily": N, '
                             '"daily_window": "utc_day", "used_today": N}}} (default: 100 '
                             'credits, mock-1 4 at once and 500 a day, mock-2 2 and 100)')


def _account_view(text: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--account-view is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise argparse.ArgumentTypeError("--account-view needs a JSON object")
    return body


def _foreign(text: str) -> ForeignRender:
    try:
        fields = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--foreign is not JSON: {exc}") from None
    if not isinstance(fields, dict) or not isinstance(fields.get("prompt"), str) \
            or not isinstance(fields.get("params", {}), dict):
        raise argparse.ArgumentTypeError(
            '--foreign needs {"prompt": "...", "params": {...}, "ago": S | "created_at": T}')
    try:
        created = fields.get("created_at")
        return ForeignRender(prompt=fields["prompt"], params=fields.get("params", {}),
                             created_at=None if created is None else float(created),
                             ago=float(fields.get("ago", 0.0)))
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError("--foreign: 'ago' and 'created_at' are "
                                         "seconds") from None


def options_from_args(args: argparse.Namespace) -> MockOptions:
    extra: dict[str, Any] = {"video_path": args.video} if args.video is not None else {}
    extra.update(prompt_clips=not args.plain_video, clip_dir=args.clip_dir)
    return MockOptions(
        render_seconds_min=args.render_seconds_min,
        render_seconds_max=args.render_seconds_max,
        seed=args.seed,
        fail_rate=args.fail_rate,
        rate_limit_rate=args.rate_limit_rate,
        server_error_rate=args.server_error_rate,
        retry_after=args.retry_after,
        lookup_enabled=not args.no_lookup,
        accept_keys=frozenset(args.accept_key) if args.accept_key else None,
        download_delay_per_chunk=args.download_delay,
        link_ttl_seconds=args.link_ttl,
        list_enabled=not args.no_list,
        list_page_size=args.page_size,
        list_delay_min=args.list_delay[0],
        list_delay_max=args.list_delay[1],
        foreign_renders=tuple(args.foreign or ()),
        hold_create_answer_seconds=args.hold_create_answer,
        poll_after_seconds=args.poll_after,
        send_hint=not args.no_hint,
        send_progress=not args.no_progress,
        account_view=args.account_view,
        **extra,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; returns the exit code."""
    try:
        options = options_from_args(args)
    except ValueError as exc:
        print(f"mock provider: {exc}", file=sys.stderr)
        return 2

    def announce(url: str) -> None:
        print(f"mock provider listening on {url}", flush=True)

    try:
        serve_forever(options, args.port, host=args.host, on_listening=announce)
    except (OSError, ValueError) as exc:
        print(f"mock provider: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="reelqueue mock-provider", description="Run the local mock video provider."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
