"""One render's price (intake/estimate.py): the price table with its variants, the
accounts' own prices and the rule between them, and the words for a job without a price."""

from __future__ import annotations

from typing import Any

import pytest

from reelqueue.domain.models import AccountSpec, JobSpec
from reelqueue.intake.estimate import (
    NO_ACCOUNTS,
    UNKNOWN,
    AccountPrices,
    CostEstimate,
    CostLine,
    account_price,
    estimate_cost,
    money,
    quote_job,
    stamp_prices,
    table_price,
)
from reelqueue.providers.base import ParamSpec, PriceVariant

pytestmark = pytest.mark.unit

SPEC = ParamSpec(
    models=("cheap", "dear", "free-text"),
    resolutions=("720p", "1080p"),
    price_per_second={"cheap": 0.10, "dear": 0.40},
    price_variants={"dear": (PriceVariant(0.60, resolution="1080p"),
                             PriceVariant(0.20, audio=False),
                             PriceVariant(0.50, resolution="1080p", audio=False),
                             PriceVariant(0.90, resolution="1080p", seconds=10.0))},
    price_source="test table, read 2026-12-01",
)
SET_IT = "price unknown — set it with `reelqueue accounts set NAME --price-per-second USD`"


def params(model: str, seconds: float = 5, **more: Any) -> dict[str, Any]:
    return {"model": model, "duration": seconds, "resolution": "720p", **more}


def book(*accounts: tuple[str, str, float | None]) -> AccountPrices:
    return AccountPrices.of(
        AccountSpec(name, provider, 1, settings={} if own is None else
                    {"price_per_second": own})
        for name, provider, own in accounts)


def test_the_unknown_words_are_the_ones_the_user_is_told() -> None:
    assert UNKNOWN == SET_IT


@pytest.mark.parametrize(("row", "per_second"), [
    (params("cheap"), 0.10),
    (params("dear"), 0.40),                                     # the model's own price
    (params("dear", resolution="1080p"), 0.60),                 # one condition met
    (params("dear", audio=False), 0.20),                        # the row says no audio
    (params("dear", audio="no"), 0.20),
    (params("dear", audio=True), 0.40),                         # no audio=True variant
    (params("dear", resolution="1080P", audio=False), 0.50),    # the most specific wins
    (params("dear", 10, resolution="1080p"), 0.90),
    (params("free-text"), None),                                # a model without a price
    (params("unheard-of"), None),
])
def test_the_table_price_is_the_most_specific_fitting_variant(
        row: dict[str, Any], per_second: float | None) -> None:
    assert table_price(SPEC, row) == per_second


def test_a_tie_between_variants_takes_the_dearer() -> None:
    spec = ParamSpec(models=("m",), price_per_second={"m": 0.1},
                     price_variants={"m": (PriceVariant(0.3, resolution="720p"),
                                           PriceVariant(0.2, seconds=5.0))})
    assert table_price(spec, params("m")) == 0.3


def test_a_price_from_the_table_carries_its_source() -> None:
    quote = quote_job("p", params("dear", resolution="1080p"), None, SPEC)
    assert (quote.usd, quote.source, quote.unknown) == (3.0, "test table, read 2026-12-01", "")
    assert quote.text == "$3.00 (test table, read 2026-12-01)"


def test_without_an_account_the_unknown_price_names_the_provider() -> None:
    quote = quote_job("kling", params("free-text"), None, SPEC)
    assert quote.usd is None and quote.source == ""
    assert quote.unknown == (f"{SET_IT} once you add an account for kling "
                             "(reelqueue accounts add NAME --provider kling)")


def test_a_row_without_a_duration_has_no_price_rather_than_zero() -> None:
    quote = quote_job("p", {"model": "cheap"}, None, SPEC)
    assert quote.usd is None and quote.unknown.startswith(SET_IT)


def test_a_pinned_job_takes_its_accounts_own_price() -> None:
    accounts = book(("a", "p", 0.05), ("b", "p", None))
    quote = quote_job("p", params("dear"), "a", SPEC, accounts)
    assert (quote.usd, quote.source) == (0.25, "account a: own price, $0.05/s")
    assert quote_job("p", params("dear"), "b", SPEC, accounts).usd == 2.0  # the table's
    unknown = quote_job("p", params("free-text"), "b", SPEC, accounts)
    assert unknown.usd is None and unknown.unknown == f"{SET_IT} for account b"
    elsewhere = book(("x", "other-provider", 9.0))  # not a price of this provider
    assert quote_job("p", params("dear"), "x", SPEC, elsewhere).usd == 2.0


def test_accounts_that_agree_give_their_price() -> None:
    accounts = book(("a", "p", 0.05), ("b", "p", 0.05), ("other", "q", 9.0))
    quote = quote_job("p", params("free-text"), None, SPEC, accounts)
    assert (quote.usd, quote.source) == (0.25, "accounts a, b: own price, $0.05/s")


def test_accounts_that_differ_give_the_dearest() -> None:
    own_prices = book(("a", "p", 0.05), ("b", "p", 0.07))
    quote = quote_job("p", params("free-text"), None, SPEC, own_prices)
    assert quote.usd == 0.35
    assert quote.source == "the dearest of the p accounts: account b: own price, $0.07/s"
    one_uses_the_table = book(("a", "p", 0.05), ("b", "p", None))
    quote = quote_job("p", params("cheap"), None, SPEC, one_uses_the_table)
    assert (quote.usd, quote.source) == (
        0.5, "the dearest of the p accounts: test table, read 2026-12-01")


def test_an_account_without_any_price_makes_the_unpinned_job_unknown() -> None:
    accounts = book(("a", "p", 0.05), ("b", "p", None), ("c", "p", None))
    quote = quote_job("p", params("free-text"), None, SPEC, accounts)
    assert quote.usd is None and quote.unknown == f"{SET_IT} for accounts b, c"
    priced_everywhere = book(("a", "p", 0.05), ("b", "p", 0.05), ("c", "p", 0.05))
    assert quote_job("p", params("free-text"), None, SPEC, priced_everywhere).usd == 0.25


@pytest.mark.parametrize("setting", [None, 0, -1, True, "0.1", float("inf"), float("nan")])
def test_only_a_positive_number_is_an_accounts_own_price(setting: object) -> None:
    assert account_price({"price_per_second": setting}) is None
    assert account_price({"price_per_second": 0.25}) == 0.25


def test_the_estimate_never_shows_zero_for_jobs_without_a_price() -> None:
    jobs = [JobSpec(f"k{i}", "p", "p", f"/o/{i}.mp4", params=params(model))
            for i, model in enumerate(["cheap", "free-text", "free-text"])]
    estimate = estimate_cost(jobs, lambda _kind: SPEC)
    (line,) = estimate.lines
    assert (line.jobs, line.usd, line.unpriced_jobs) == (3, 0.5, 2)
    assert line.describe() == (
        f"p: 3 jobs, 15 s of video, $0.50 for 1 job; 2 jobs {SET_IT} once you add an account "
        "for p (reelqueue accounts add NAME --provider p) (prices: test table, read "
        "2026-12-01)")
    assert estimate.describe_total() == "$0.50 for 1 job; 2 jobs price unknown (see above)"
    none_priced = estimate_cost(jobs[1:], lambda _kind: SPEC)
    assert none_priced.lines[0].describe().endswith("10 s of video, " + none_priced.lines[0]
                                                    .unknown)
    assert none_priced.describe_total() == "price unknown (2 jobs; see above)"
    assert "$0.00" not in none_priced.lines[0].describe() + none_priced.describe_total()


def test_money_under_a_cent_is_not_rounded_to_zero() -> None:
    line = CostLine("p", None, 1, 0.2, 0.002, sources=("s",))
    assert line.describe() == "p: 1 job, 0 s of video, $0.002 (prices: s)"
    assert CostEstimate((line,), 0.002).describe_total() == "$0.002"


def test_charges_and_their_refunds_read_zero() -> None:
    """A spend of charges and refunds (a lost mock render, a refused create) sums to a
    float's last bits around 0: it reads "$0.00" like any zero."""
    assert money(0.06 + 0.07 - 0.06 - 0.07) == "$0.00"
    assert money(0.05 + 0.07 - 0.07 - 0.05 - 1e-17) == "$0.00"
    assert money(0.0) == "$0.00" and money(0.004) == "$0.004" and money(12.5) == "$12.50"


def test_stamped_prices_follow_the_accounts_own_prices() -> None:
    jobs = [JobSpec("k1", "p", "p", "/o/1.mp4", params=params("free-text")),
            JobSpec("k2", "p", "p", "/o/2.mp4", params=params("free-text"),
                    pinned_account="a")]
    stamp_prices(jobs, lambda _kind: SPEC, NO_ACCOUNTS)
    assert [job.metadata.get("price") for job in jobs] == [None, None]
    stamp_prices(jobs, lambda _kind: SPEC, book(("a", "p", 0.02)))
    assert [job.metadata.get("price") for job in jobs] == [0.1, 0.1]
