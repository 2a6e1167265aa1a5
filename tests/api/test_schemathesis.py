"""Schemathesis (pinned in the ``test`` extra) against a real ``reelqueue serve`` process
over TLS with a bearer token: every check, positive and negative data, a stated number
of examples per operation and a stated time budget; the run must end with 0 failures.

The command (``st run``, the venv's entry point beside ``sys.executable``)::

    st --config-file <tmp>/schemathesis.toml run https://127.0.0.1:PORT/v1/openapi.json
       --mode all --max-examples 25 --seed 22
       --tls-verify <data>/api-cert.pem -H "Authorization: Bearer <token>"
       --generation-database none --request-timeout 30 --no-color

- Phases: examples (none in the document), coverage, fuzzing and stateful, all on.
- Examples per operation: ``MAX_EXAMPLES`` (25) for the fuzzing phase on every
  operation of the document but one, 10 on ``GET /v1/events`` (below); the coverage phase adds
  its own boundary cases and the stateful phase its scenarios.
- Time budget: ``BUDGET_SECONDS`` (480 s) for the schemathesis process (the
  subprocess's timeout: past it the test fails).
- TLS is verified against the certificate the server wrote (pinned, never skipped); the
  token (scope ``admin``) is passed in a header and is filtered from schemathesis'
  output by its own sanitizer (checked below: the token never appears in it).
- Fixed seed, so a failure reproduces; no example database, no report files, and
  schemathesis 4 has no telemetry: nothing leaves the loopback.

All checks: the config file (``CONFIG``) says ``[checks] enabled = true``, which is what
``--checks all`` does; it is said there and not on the command line because in 4.32.5 a
``--checks all`` given on the command line turns back on a check that the file turns off
for one operation. ``checked_config`` below reads the file with schemathesis' own loader
and asserts that every built-in check is on for every operation but the one listed here.
``max_response_time`` is not one of ``--checks all``'s checks (it needs a limit); no
limit is set: response times are the benchmark's business, on a loaded 2-core machine.

Turned off, and why (the only exception, per operation, in the generated config file):

- ``positive_data_acceptance`` (ST202) on ``POST /v1/jobs`` and ``POST /v1/batches``
  only: a schema-valid job can break its provider's rules (a duration it does not
  offer, a model the provider does not have, a provider that is not installed). Those
  rules depend on the provider and its accounts, are the import's own, and are answered
  with a documented 422 naming each field (docs/api.md); a JSON schema cannot carry
  them. Every other check, including ``negative_data_rejection``, stays on for these two
  operations.

Not a loosening: ``GET /v1/events`` is a Server-Sent Events stream that never ends (a
keep-alive comment every second); schemathesis reads an event stream until its request
timeout passes in total, so that operation gets a 5 s request timeout (its answer is
still checked: status, headers, content type, each event against the document's
``ServerSentEvent``) and ``EVENTS_MAX_EXAMPLES`` (10) fuzzing examples instead of 25:
each of them costs the 5 s, and 25 took the run past 200 s on the loaded 2-core machine.
(3 s was tried: one stream's headers took longer to come once, a network error.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reelqueue.api.openapi import openapi_document
from tests.api.serve_harness import ServeProcess, make_token

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMATHESIS_VERSION = "4.32.5"
MAX_EXAMPLES = 25
BUDGET_SECONDS = 480.0
SEED = int(os.environ.get("REELQUEUE_SCHEMATHESIS_SEED", "22"))
"""Fixed, so a failure reproduces; ``REELQUEUE_SCHEMATHESIS_SEED=N`` runs another (issue 34's
closing note: seeds 1-3 once)."""
EVENTS_READ_SECONDS = 5
EVENTS_MAX_EXAMPLES = 10

CONFIG = f"""\
# Written by tests/api/test_schemathesis.py; see its docstring for why.
# Every check on (what --checks all does; said here so the per-operation lines win).
[checks]
enabled = true

# A value over its maxLength in the query can make the request line pass 8 KiB: the HTTP
# parser refuses it with 414 before any route (documented for every operation), which is
# a rejection; schemathesis' default list for this check leaves 414 (and 413) out.
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 422, 428, 429, "5xx"]

[[operations]]
include-name = "POST /v1/jobs"
checks.positive_data_acceptance.enabled = false

[[operations]]
include-name = "POST /v1/batches"
checks.positive_data_acceptance.enabled = false

[[operations]]
include-name = "GET /v1/events"
request-timeout = {EVENTS_READ_SECONDS}
generation.max-examples = {EVENTS_MAX_EXAMPLES}
"""


OFF = {"POST /v1/jobs": {"positive_data_acceptance"},
       "POST /v1/batches": {"positive_data_acceptance"}}
"""The checks turned off, per operation (the docstring says why)."""


def checked_config(path: Path) -> None:
    """Every built-in check is on for every operation, except those in ``OFF``."""
    from schemathesis.config import SchemathesisConfig
    from schemathesis.config._checks import _BUILTIN_CHECK_NAMES, ChecksConfig

    project = SchemathesisConfig.from_path(str(path)).projects.default
    names = set(_BUILTIN_CHECK_NAMES) - {"max_response_time"}
    assert len(names) == 14, sorted(names)
    labels = ("GET /v1/health", "GET /v1/openapi.json", "POST /v1/jobs", "GET /v1/jobs",
              "POST /v1/batches", "GET /v1/jobs/{job_id}", "POST /v1/jobs/{job_id}/cancel",
              "POST /v1/jobs/{job_id}/retry", "GET /v1/jobs/{job_id}/video",
              "GET /v1/accounts", "GET /v1/events", "GET /v1/batches/{batch_id}/takes",
              "POST /v1/jobs/{job_id}/review")
    for label in labels:
        layers = [op.checks for op in project.operations.operations
                  if any(f"label='{label}'" in repr(f) for f in op._filter_set._includes)]
        merged = ChecksConfig.from_hierarchy([*layers, project.checks])
        off = {name for name in names if not merged.get_by_name(name=name).enabled}
        assert off == OFF.get(label, set()), (label, off)


def schemathesis_command() -> list[str]:
    st = Path(sys.executable).parent / "st"
    if not st.exists():  # a venv without the entry point script
        return [sys.executable, "-m", "schemathesis.cli"]
    return [str(st)]


def test_schemathesis_finds_nothing_against_a_served_api_over_tls(tmp_path: Path) -> None:
    from importlib.metadata import version

    assert version("schemathesis") == SCHEMATHESIS_VERSION, "pinned in pyproject.toml"
    data = tmp_path / "data"
    token = make_token(data, "schemathesis", "admin")
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    checked_config(config)
    with ServeProcess(data, tmp_path / "videos", "--paused") as server:
        command = [
            *schemathesis_command(), "--config-file", str(config), "run",
            f"{server.url}/v1/openapi.json",
            "--mode", "all",
            "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED),
            "--tls-verify", str(server.cert),
            "--header", f"Authorization: Bearer {token}",
            "--generation-database", "none", "--request-timeout", "30", "--no-color",
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=BUDGET_SECONDS)
        took = time.monotonic() - started
        log = server.output()
    output = done.stdout + done.stderr
    (tmp_path / "schemathesis.out").write_text(output, encoding="utf-8")
    assert token not in output and token not in log
    summary = output[output.rfind("SUMMARY"):] if "SUMMARY" in output else output[-6000:]
    print(f"schemathesis {SCHEMATHESIS_VERSION}: {MAX_EXAMPLES} examples per operation "
          f"({EVENTS_MAX_EXAMPLES} on GET /v1/events), exit {done.returncode} in "
          f"{took:.0f} s (budget {BUDGET_SECONDS:.0f} s)\n{summary}")
    assert done.returncode == 0, output[-20000:]
    # the run reached the API: every operation it found tested (it counts one fewer than
    # the document's paths x methods: 11 of 12 before issue 37), no failure reported
    operations = sum(len(ops) for ops in openapi_document()["paths"].values())
    found = re.search(r"Selected: (\d+)/(\d+)\s+Tested: (\d+)", output)
    assert found is not None, output[-6000:]
    assert found[1] == found[2] == found[3] and int(found[3]) >= operations - 1, found[0]
    counts = re.search(r"Test cases:\s+(\d+) generated, (\d+) passed", output)
    assert counts is not None, output[-6000:]
    assert counts[1] == counts[2] and int(counts[1]) >= 10 * 10, counts[0]
    assert "failed" not in output[output.rfind("SUMMARY"):], output[-6000:]
    assert " 500 " not in log and "Traceback" not in log, log[-5000:]
