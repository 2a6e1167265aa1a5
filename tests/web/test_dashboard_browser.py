"""The web dashboard in a real browser (issue 37): Debian's chromium headless against a
real ``reelqueue serve`` over TLS with the mock provider (tests/web/browser.py says why
Selenium). One server and one browser for the module; the tests run in file order.

Checked: sign-in; the cards and counts equal ``GET /v1/accounts``, ``/v1/batches`` and
``status --json``; a job moves from waiting to done without a reload; the results'
thumbnails and player load through short-lived links under the CSP; 10 s without job
changes bring no request but the open stream; a kill -9 and restart of the server loses
no event on the page; hostile prompts, names, 1 MB of text and a ``javascript:`` URL show
as text and run nothing (no CSP violation); a read token sees no buttons and its forged
POST is 403; a retry shows its price and, confirmed, re-queues; a revoked token returns
the page to sign-in; an unknown create shows its reading of the provider's counts; 360 px
does not scroll sideways; axe-core finds no serious violation. With
``REELQUEUE_WRITE_SCREENSHOTS=1`` the pictures of docs/screenshots/ are written too.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.api.serve_harness import ServeProcess, make_token
from tests.proof.harness import MockProcess, add_account, cli, wait_for
from tests.web.browser import console_errors, requests_sent, start_chromium

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
SCREENSHOTS = REPO / "docs" / "screenshots"
WAIT = 60.0
HOSTILE_PROMPT = '<img src=x onerror="window.__pwned=1"> a cat'
HOSTILE_NAME = "shot \u202egnp.exe"
JAVASCRIPT_URL = "javascript:window.__pwned=1//"


class Env:
    """Attributes: data, videos, serve, admin, read (tokens), driver."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data, self.videos = root / "data", root / "videos"
        self.serve: ServeProcess
        self.admin = ""
        self.read = ""
        self.driver: Any = None

    def api(self, token: str | None = None) -> httpx2.Client:
        return self.serve.client(token or self.admin)

    def page(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def text(self, css: str) -> str:
        return str(self.page("const n = document.querySelector(arguments[0]);"
                             "return n ? n.textContent : '';", css))

    # The event stream carries the ledger's entries about a job or an account (not a
    # batch's own bookkeeping): these are the ones the page must see, each once.
    STREAMED = "(job_id IS NOT NULL OR account IS NOT NULL)"

    def _ledger(self, query: str, *args: object) -> int:
        db = sqlite3.connect(f"file:{self.data / 'journal.sqlite3'}?mode=ro", uri=True)
        try:
            return int(db.execute(query, args).fetchone()[0])
        finally:
            db.close()

    def ledger_max(self) -> int:
        return self._ledger(f"SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE {self.STREAMED}")

    def ledger_count(self, first: int, last: int) -> int:
        return self._ledger(f"SELECT COUNT(*) FROM ledger WHERE seq BETWEEN ? AND ? "
                            f"AND {self.STREAMED}", first, last)

    def sign_in(self, token: str) -> None:
        self.driver.get(self.serve.url + "/")
        wait_for(lambda: self.page("return !document.getElementById('sign-in').hidden "
                                   "|| !document.getElementById('main').hidden"),
                 WAIT, "the page to start")
        if not self.page("return document.getElementById('main').hidden"):
            self.page("document.getElementById('sign-out').click()")
        field = self.driver.find_element("id", "token")
        field.send_keys(token)
        self.driver.find_element("css selector", "#sign-in-form button").click()
        wait_for(lambda: self.page("return !document.getElementById('main').hidden"),
                 WAIT, "the dashboard after sign-in")
        wait_for(lambda: self.text("#live") == "Live", WAIT, "the live stream")

    def submit(self, prompt: str, name: str | None = None, batch: str = "web") -> int:
        body: dict[str, Any] = {"prompt": prompt, "batch": batch}
        if name is not None:
            body["name"] = name
        with self.api() as client:
            answer = client.post("/v1/jobs", json=body)
        assert answer.status_code == 201, answer.text
        return int(answer.json()["id"])

    def job_state(self, job_id: int) -> str:
        with self.api() as client:
            return str(client.get(f"/v1/jobs/{job_id}").json()["state"])


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("web")
    environment = Env(root)
    environment.admin = make_token(environment.data, "web-admin", "admin")
    environment.read = make_token(environment.data, "web-reader", "read")
    with MockProcess(root / "mock", "--render-seconds-min", "0.5",
                     "--render-seconds-max", "1.5") as mock:
        add_account(environment.data, "m1", mock.url, 4)
        add_account(environment.data, "m2", mock.url, 2)
        with ServeProcess(environment.data, environment.videos) as serve:
            environment.serve = serve
            environment.driver = start_chromium(serve.cert, root / "downloads")
            try:
                yield environment
            finally:
                with contextlib.suppress(Exception):
                    environment.driver.quit()


def page_batches(env: Env) -> dict[str, dict[str, int]]:
    """The queue's rows as the page shows them: batch -> state code -> jobs."""
    return dict(env.page("""
        const out = {};
        for (const row of document.querySelectorAll('#batches tbody tr')) {
          const counts = {};
          for (const c of row.querySelectorAll('.count'))
            counts[c.dataset.state] = parseInt(c.textContent, 10);
          out[row.querySelector('th .data').textContent] = counts;
        }
        return out;"""))


def page_cards(env: Env) -> dict[str, str]:
    return dict(env.page("""
        const out = {};
        for (const card of document.querySelectorAll('#accounts .card'))
          out[card.dataset.account] = card.querySelector('.live-limit').textContent;
        return out;"""))


def api_view(env: Env) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    with env.api() as client:
        batches = client.get("/v1/batches").json()["batches"]
        accounts = client.get("/v1/accounts").json()["accounts"]
    return ({b["name"]: b["counts"] for b in batches},
            {a["name"]: f"{a['live']} / {a['capacity']}" for a in accounts})


def test_sign_in_then_cards_and_counts_equal_the_api_while_a_batch_runs(env: Env) -> None:
    env.sign_in(env.admin)
    assert "web-admin" in env.text("#who")
    with env.api() as client:
        answer = client.post("/v1/batches?name=first", json=[
            {"prompt": f"a lighthouse, take {i}", "name": f"take {i}"} for i in range(8)])
    assert answer.status_code == 201, answer.text
    matched = 0

    def same() -> bool:
        # Until the finished batch shows and the page says what the API says: the page
        # reads the queue, then the cards, after each event, so a look between the two
        # reads may see the batch finished beside a card not yet read again (it stopped
        # there under load, before the page had caught up).
        nonlocal matched
        page = (page_batches(env), page_cards(env))
        agree = page == api_view(env)
        matched += agree
        return agree and page[0].get("first", {}).get("COMPLETED") == 8

    wait_for(same, 120, "the finished batch on the page as the API says it", interval=0.3)
    assert matched >= 1, "the page never showed what the API said"
    assert (page_batches(env), page_cards(env)) == api_view(env)
    status = cli(env.data, "status", "--json", videos=env.videos)
    assert status.returncode == 0, status.stderr
    by_state = json.loads(status.stdout)["by_state"]
    shown: dict[str, int] = {}
    for counts in page_batches(env).values():
        for state, n in counts.items():
            shown[state] = shown.get(state, 0) + n
    assert shown == {k: v for k, v in by_state.items() if v}


def test_a_job_moves_from_waiting_to_done_without_reload(env: Env) -> None:
    env.page("window.__sameDocument = 'yes';")
    job = env.submit("a slow fox [[mock:render_seconds=2]]", name="slow fox")
    row = f"#jobs tr[data-job='{job}']"
    wait_for(lambda: env.text(f"{row} .job-state"), WAIT, "the new job's row")
    wait_for(lambda: env.page(f"return document.querySelector(\"{row}\")?.dataset.state")
             == "COMPLETED", WAIT, "the job to show done")
    assert env.page("return window.__sameDocument") == "yes"  # never reloaded
    assert env.text(f"{row} .job-state") == "done" or env.text(f"{row} .job-state")
    assert env.job_state(job) == "COMPLETED"


def test_results_show_thumbnails_and_play_through_short_lived_links(env: Env) -> None:
    wait_for(lambda: env.page("""return [...document.querySelectorAll('#gallery img')]
        .some((i) => i.complete && i.naturalWidth > 0)"""), WAIT, "a thumbnail")
    sources = env.page("return [...document.querySelectorAll('#gallery img')]"
                       ".map((i) => i.getAttribute('src')).filter(Boolean)")
    assert sources and all(s.startswith("/links/") for s in sources), sources
    env.page("document.querySelector('#gallery button.thumb').click()")
    wait_for(lambda: env.page("const v = document.querySelector('#player video');"
                              "return v !== null && v.readyState >= 1 && v.duration > 0"),
             WAIT, "the player to read the video's header")
    assert env.page("return document.querySelector('#player video')"
                    ".getAttribute('src')").startswith("/links/")
    env.page("[...document.querySelectorAll('#player button')].pop().click()")
    assert env.page("return window.__csp") == []


def test_ten_quiet_seconds_bring_no_request_but_the_open_stream(env: Env) -> None:
    with env.api() as client:
        wait_for(lambda: not any(j["state"] not in ("COMPLETED", "FAILED", "CANCELLED")
                                 for j in client.get("/v1/jobs").json()["jobs"]),
                 WAIT, "every job to settle")
    last = env.ledger_max()
    wait_for(lambda: env.page("return document.documentElement.dataset.lastEvent")
             == str(last), WAIT, "the page to catch up")
    time.sleep(1.0)  # the refresh that the last event asked for
    requests_sent(env.driver)  # drained
    time.sleep(10.0)
    assert env.ledger_max() == last, "something changed meanwhile; the test is void"
    assert requests_sent(env.driver) == []
    assert env.text("#live") == "Live"


def test_hostile_values_show_as_text_and_run_nothing(env: Env) -> None:
    hostile = env.submit(HOSTILE_PROMPT, name=HOSTILE_NAME)
    long_job = env.submit("long " + "x" * 3_900, name="y" * 400)
    wait_for(lambda: env.job_state(long_job) == "COMPLETED", WAIT, "the long job")
    db = sqlite3.connect(env.data / "journal.sqlite3", timeout=30)
    with db:  # what a hostile team database could hold: 1 MB of error and a URL
        db.execute("UPDATE jobs SET error_label = 'provider error', error_message = ?, "
                   "prompt = ? WHERE id = ?",
                   (JAVASCRIPT_URL + " " + "z" * 1_000_000, "w" * 1_000_000, long_job))
    db.close()
    env.driver.refresh()
    wait_for(lambda: env.text("#live") == "Live", WAIT, "the page again")
    row = f"#jobs tr[data-job='{hostile}']"
    wait_for(lambda: env.page(f"return !!document.querySelector(\"{row}\")"), WAIT,
             "the hostile row")
    shown = env.text(f"#jobs tr[data-job='{hostile}'] td:nth-child(2)")
    assert shown == "shot ⟨U+202E⟩gnp.exe"  # the override shown, not obeyed
    env.page(f"document.querySelector(\"#jobs tr[data-job='{long_job}'] button\").click()")
    wait_for(lambda: "z" in env.text("#detail-body .error-text"), WAIT, "the long job's detail")
    error_text = env.text("#detail-body .error-text")
    assert JAVASCRIPT_URL in error_text and error_text.endswith("[cut]")
    assert len(error_text) < 1000
    assert env.text("#detail-body .prompt").endswith("[cut]")
    env.page(f"document.querySelector(\"#jobs tr[data-job='{hostile}'] button\").click()")
    wait_for(lambda: env.text("#detail-body .prompt") == HOSTILE_PROMPT, WAIT,
             "the hostile prompt as text")
    sources = env.page("return [...document.images].map((i) => i.getAttribute('src'))")
    assert all(s is None or s.startswith("/links/") for s in sources), sources
    assert env.page("return document.querySelectorAll('a[href]').length") == 1  # skip link
    assert env.page("return window.__pwned") is None
    assert env.page("return window.__csp") == []
    errors = [e for e in console_errors(env.driver) if "Content Security Policy" in e]
    assert errors == []


def test_a_read_token_sees_no_buttons_and_a_forged_post_is_refused(env: Env) -> None:
    env.sign_in(env.read)
    assert "read" in env.text("#who")
    wait_for(lambda: env.page("return document.querySelectorAll('#accounts .card').length")
             == 2, WAIT, "the cards")
    env.page("document.querySelector('#jobs tbody button').click()")
    wait_for(lambda: env.text("#detail-title").startswith("Job"), WAIT, "a job's detail")
    assert env.page("return document.querySelectorAll('button.action').length") == 0
    status = env.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch('/v1/jobs/1/retry', {method: 'POST', headers: {Authorization: 'Bearer ' +
              sessionStorage.getItem('reelqueue.token')}}).then((r) => done(r.status));""")
    assert status == 403


def test_a_retry_shows_its_price_and_confirmed_requeues(env: Env) -> None:
    env.sign_in(env.admin)
    job = env.submit("a refused shot [[mock:content_policy*1]]", name="refused once")
    wait_for(lambda: env.job_state(job) == "FAILED", WAIT, "the job to fail")
    row = f"#jobs tr[data-job='{job}']"
    wait_for(lambda: env.page(f"return document.querySelector(\"{row}\")?.dataset.state")
             == "FAILED", WAIT, "the failure on the page")
    env.page(f"document.querySelector(\"{row} button\").click()")
    wait_for(lambda: env.page("return [...document.querySelectorAll('#detail-body button')]"
                              ".some((b) => b.textContent === 'Retry…')"), WAIT, "Retry")
    env.page("[...document.querySelectorAll('#detail-body button')]"
             ".find((b) => b.textContent === 'Retry…').click()")
    wait_for(lambda: env.text("#detail-body .confirm .price"), WAIT, "the plan's price")
    price = env.text("#detail-body .confirm .price")
    with env.api() as client:
        plan = client.get(f"/v1/jobs/{job}/retry-plan").json()
    assert plan["pays"] and price == f"Price: {plan['price']}"
    assert env.job_state(job) == "FAILED"  # the plan changed nothing
    env.page("document.querySelector('#detail-body .confirm-retry').click()")
    wait_for(lambda: env.job_state(job) == "COMPLETED", WAIT, "the retried job to render")
    wait_for(lambda: env.page(f"return document.querySelector(\"{row}\")?.dataset.state")
             == "COMPLETED", WAIT, "the page to show it done")


def test_360_px_does_not_scroll_sideways_and_1920_px_fits(env: Env) -> None:
    for width, height in ((360, 800), (1920, 1080)):
        env.driver.set_window_size(width, height)
        time.sleep(0.2)
        inner, scroll = env.page("return [window.innerWidth, "
                                 "document.documentElement.scrollWidth]")
        assert scroll <= inner, (width, scroll, inner)
    env.driver.set_window_size(1280, 720)


def test_axe_finds_no_serious_violation(env: Env) -> None:
    env.driver.execute_script(AXE.read_text(encoding="utf-8"))
    results = env.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ['violations']}).then(
            (r) => done(r.violations.map((v) => [v.id, v.impact, v.nodes.length])),
            (e) => done(['error', String(e)]));""")
    serious = [v for v in results if v[1] in ("serious", "critical")]
    assert serious == [], results


def test_a_kill_9_and_restart_loses_no_event_on_the_page(env: Env) -> None:
    first = int(env.page("return document.documentElement.dataset.firstEvent"))
    before = int(env.page("return document.documentElement.dataset.eventsSeen"))
    assert before == env.ledger_count(first, env.ledger_max())
    env.serve.kill()
    wait_for(lambda: env.page("return !document.getElementById('banner').hidden"), 30,
             "the banner after 5 s without the stream")
    env.serve.start()
    wait_for(lambda: env.text("#live") == "Live", WAIT, "the page to reconnect")
    assert env.page("return document.getElementById('banner').hidden")
    jobs = [env.submit(f"after the restart {i}", batch="after") for i in range(3)]
    wait_for(lambda: all(env.job_state(j) == "COMPLETED" for j in jobs), WAIT * 2,
             "the new jobs")
    last = env.ledger_max()
    wait_for(lambda: env.page("return document.documentElement.dataset.lastEvent")
             == str(last), WAIT, "the page to catch up")
    seen = int(env.page("return document.documentElement.dataset.eventsSeen"))
    assert seen == env.ledger_count(first, last)  # every event once, none lost


def test_a_revoked_token_returns_the_page_to_sign_in(env: Env) -> None:
    short = make_token(env.data, "web-short", "read")
    env.sign_in(short)
    done = cli(env.data, "tokens", "revoke", "web-short")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: env.page("return !document.getElementById('sign-in').hidden"), 15,
             "the page to return to sign-in")
    assert "refused the token" in env.text("#sign-in-error")
    assert env.page("return sessionStorage.getItem('reelqueue.token')") is None


def test_an_unknown_create_shows_its_reading_of_the_provider_s_counts(env: Env) -> None:
    """Issue 32 item 6: the needs-attention list and the job's detail show the last
    reading of the provider's counts, the API's own words, as text (a hostile unit from
    the team database runs nothing)."""
    job = env.submit("a heron", name="lost create")
    wait_for(lambda: env.job_state(job) == "COMPLETED", WAIT, "the job")
    hostile_unit = '<img src=x onerror="window.__pwned=1">'
    db = sqlite3.connect(env.data / "journal.sqlite3", timeout=30)
    with db:  # as a create whose answer was lost, then read by `resolve` on another machine
        db.execute("UPDATE jobs SET state = 'PARKED', provider_job_id = NULL, "
                   "client_token = 'ct-web', error_class = 'unknown', "
                   "error_label = 'submit outcome unknown', error_message = 'lost', "
                   "finished_at = NULL WHERE id = ?", (job,))
        db.execute("INSERT INTO ledger (at, event, job_id, account, detail) "
                   "VALUES (?, 'create_evidence', ?, 'm1', ?)", (time.time(), job, json.dumps({
                       "verdict": "billed", "day": time.strftime("%Y-%m-%d", time.gmtime()),
                       "unit": hostile_unit, "creates_in_window": 1, "provider_units": 60,
                       "price_units": 60, "account": "m1", "model": "gen4.5",
                       "read_at": time.time()})))
    db.close()
    with env.api() as client:
        words = client.get(f"/v1/jobs/{job}").json()["create_evidence"]["words"]
    assert "the provider counted it: billed (60 " + hostile_unit in words
    env.sign_in(env.admin)
    item = f"#attention li[data-job='{job}'] .evidence"
    wait_for(lambda: env.text(item) == words, WAIT, "the reading in needs attention")
    env.page(f"document.querySelector(\"#attention li[data-job='{job}'] button\").click()")
    wait_for(lambda: env.text("#detail-body .evidence") == words, WAIT,
             "the reading in the job's detail")
    assert env.page("return window.__pwned") is None


@pytest.mark.skipif(os.environ.get("REELQUEUE_WRITE_SCREENSHOTS") != "1",
                    reason="writes docs/screenshots only when asked")
def test_write_the_screenshots(env: Env) -> None:
    env.sign_in(env.admin)
    for scheme in ("light", "dark"):
        env.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "features": [{"name": "prefers-color-scheme", "value": scheme}]})
        for width, height in ((360, 800), (1280, 720), (1920, 1080)):
            env.driver.set_window_size(width, height)
            env.page("window.scrollTo(0, 0)")
            time.sleep(0.5)
            env.driver.save_screenshot(str(SCREENSHOTS / f"web-{width}-{scheme}.png"))
    env.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    env.driver.set_window_size(1280, 720)
