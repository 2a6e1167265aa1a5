"""application/trust.py and credentials/binding.py: which key an account row gets on this
machine, and when none (issue 21). Pure rules on an in-memory reader; the attacks through
the real engine and commands are in tests/team/test_hostile_accounts.py."""

from __future__ import annotations

from typing import cast

import pytest

from reelqueue.application.team_seam import SoloMode, TeamMode
from reelqueue.application.trust import DirectKeys, TrustedKeys
from reelqueue.credentials.binding import (
    OWN_HOST,
    KeyBinding,
    api_origin,
    binding_ref,
    team_key_ref,
)
from reelqueue.credentials.keystore import KeyStore, MemoryKeyring
from reelqueue.domain.models import Account
from reelqueue.domain.states import AccountStatus
from reelqueue.engine.account_keys import CONFIRM, NO_KEY
from reelqueue.store.base import Store

pytestmark = [pytest.mark.unit]

DB = "0123456789abcdef0123456789abcdef"
KEY_A, KEY_B = "sk-aaaa-1111-2222", "sk-bbbb-3333-4444"
GATEWAY = "https://gw.example/v1"
RUNWAY_OWN = "https://api.dev.runwayml.com"


def account(name: str = "a", provider: str = "runway", base_url: str | None = None,
            key_ref: str | None = "account:a") -> Account:
    return Account(name=name, provider=provider, capacity=1, position=1, enabled=True,
                   base_url=base_url, key_ref=key_ref, status=AccountStatus.READY,
                   status_detail=None, cooldown_until=None, settings={}, created_at=0.0)


def keys(entries: dict[str, str], database_id: str | None = None
         ) -> tuple[TrustedKeys, MemoryKeyring]:
    backend = MemoryKeyring()
    for ref, value in entries.items():
        backend.set_password("ReelQueue", ref, value)
    return TrustedKeys(DirectKeys(KeyStore(backend=backend), ttl=0), database_id), backend


def bound(ref: str, key: str, kind: str, base_url: str | None) -> dict[str, str]:
    return {ref: key, binding_ref(ref): KeyBinding.of(kind, base_url).to_text()}


def test_origin_ignores_path_case_and_default_port() -> None:
    assert api_origin("HTTPS://GW.Example:443/v1/") == "https://gw.example"
    assert api_origin("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080"
    assert api_origin("https://gw.example.evil.test") != api_origin("https://gw.example")
    assert api_origin(None) == OWN_HOST


def test_the_key_goes_only_where_it_is_bound() -> None:
    trusted, _ = keys(bound("account:a", KEY_A, "openai-compat", GATEWAY))
    row = account(provider="openai-compat", base_url=GATEWAY)
    assert trusted.key_for(row, None).key == KEY_A
    assert trusted.key_for(account(provider="openai-compat", base_url=GATEWAY + "/other"),
                           None).key == KEY_A  # same host
    for changed in (account(provider="openai-compat", base_url="https://evil.test/v1"),
                    account(provider="openai-compat", base_url="http://gw.example/v1"),
                    account(provider="fal", base_url=GATEWAY),
                    account(provider="openai-compat", base_url="https://gw.example:8443")):
        answer = trusted.key_for(changed, None)
        assert (answer.key, answer.problem) == (None, CONFIRM)
        assert "confirm on this machine" in answer.detail


def test_the_row_key_ref_finds_nothing() -> None:
    """The entry is derived from the name: a key_ref naming another account's key or the
    database password is not read."""
    entries = {**bound("account:b", KEY_B, "runway", None),
               "database:team@db:5432/rq": "db-secret-pass"}
    trusted, _ = keys(entries)
    for ref in ("account:b", "database:team@db:5432/rq"):
        answer = trusted.key_for(account(name="a", key_ref=ref), RUNWAY_OWN)
        assert (answer.key, answer.problem) == (None, NO_KEY)


def test_a_renamed_row_keeps_each_key_to_its_own_binding() -> None:
    entries = {**bound("account:a", KEY_A, "runway", None),
               **bound("account:b", KEY_B, "openai-compat", GATEWAY)}
    trusted, _ = keys(entries)
    # Row "b" now claims runway's own API (where a's key goes): b's key is not sent there.
    assert trusted.key_for(account(name="b", provider="runway"), RUNWAY_OWN).problem == CONFIRM
    # Row "a" now names the gateway: a's key is not sent there.
    assert trusted.key_for(account(name="a", provider="openai-compat", base_url=GATEWAY),
                           None).problem == CONFIRM


def test_an_unbound_key_is_bound_to_its_adapters_own_api_at_first_use_only() -> None:
    trusted, backend = keys({"account:a": KEY_A})
    assert trusted.key_for(account(provider="runway", base_url=RUNWAY_OWN + "/v1"),
                           RUNWAY_OWN).key == KEY_A  # the official address, written out
    assert KeyBinding.from_text(backend.get_password("ReelQueue", binding_ref("account:a"))
                                ) == KeyBinding("runway", OWN_HOST)
    # Its kind is fixed from then on: a row switched to another provider waits.
    assert trusted.key_for(account(provider="luma"), "https://api.lumalabs.ai").problem \
        == CONFIRM
    # A gateway address is never bound automatically.
    gateway, backend = keys({"account:a": KEY_A})
    answer = gateway.key_for(account(provider="openai-compat", base_url=GATEWAY), None)
    assert (answer.problem, answer.key) == (CONFIRM, None)
    assert "not confirmed on this machine" in answer.detail
    assert backend.get_password("ReelQueue", binding_ref("account:a")) is None


def test_a_binding_that_cannot_be_read_sends_nothing() -> None:
    trusted, _ = keys({"account:a": KEY_A, binding_ref("account:a"): "{not json"})
    assert trusted.key_for(account(), RUNWAY_OWN).problem == CONFIRM


def test_team_entries_are_named_after_the_database() -> None:
    ref = team_key_ref(DB, "a")
    assert ref == f"team:{DB}/account:a"
    trusted, _ = keys(bound(ref, KEY_A, "runway", None), database_id=DB)
    assert trusted.key_ref("a") == ref
    assert trusted.key_for(account(), RUNWAY_OWN).key == KEY_A
    other_db, _ = keys(bound(ref, KEY_A, "runway", None), database_id="f" * 32)
    assert other_db.key_for(account(), RUNWAY_OWN).problem == NO_KEY
    with pytest.raises(ValueError):
        team_key_ref("../account:a", "a")


def test_a_team_key_kept_before_bindings_is_taken_over_unless_bound_locally() -> None:
    trusted, backend = keys({"account:a": KEY_A}, database_id=DB)
    assert trusted.key_for(account(), RUNWAY_OWN).key == KEY_A
    assert backend.get_password("ReelQueue", team_key_ref(DB, "a")) == KEY_A
    assert backend.get_password("ReelQueue", binding_ref(team_key_ref(DB, "a")))
    # The old entry is bound already: the local journal's own account of that name.
    local, _ = keys(bound("account:a", KEY_A, "runway", None), database_id=DB)
    assert local.key_for(account(), RUNWAY_OWN).problem == NO_KEY


class _Store:
    def __init__(self, value: object) -> None:
        self.database_id = value


def test_the_database_identity_is_never_the_local_namespace() -> None:
    # The journal's mode says which namespace (application/team_seam.py).
    assert SoloMode().database_identity(cast(Store, _Store(DB))) is None  # local journal
    team = TeamMode("postgresql://reelqueue@db.example/team")
    assert team.database_identity(cast(Store, _Store(DB))) == DB
    for planted in ("", "x/../account:b", None, 42):
        identity = team.database_identity(cast(Store, _Store(planted)))
        assert identity is not None and len(identity) == 32
        assert team_key_ref(identity, "a").startswith("team:")


class _Flaky:
    """A keystore whose reads fail after the first one (a keyring that stops answering)."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.reads = values, 0

    def get_key(self, ref: str) -> str | None:
        from reelqueue.domain.errors import KeyringUnavailable

        self.reads += 1
        if self.reads > len(self.values):
            raise KeyringUnavailable("the keyring did not answer")
        return self.values.get(ref)


def test_a_keyring_that_stops_answering_keeps_what_was_read() -> None:
    values = bound("account:a", KEY_A, "runway", None)
    reader = DirectKeys(_Flaky(values), ttl=0)
    trusted = TrustedKeys(reader, None)
    assert trusted.key_for(account(), RUNWAY_OWN).key == KEY_A
    assert trusted.key_for(account(), RUNWAY_OWN).key == KEY_A  # reads fail now
    assert reader.keystore.reads > len(values)


@pytest.mark.parametrize("text", ["", "not json", "[1]", '{"kind": "runway"}',
                                  "[" * 5_000, '{"kind":' * 5_000])
def test_a_binding_that_is_not_ours_reads_as_none(text: str) -> None:
    """A keyring entry is another program's to write too: anything but our binding, nested
    past the parser included, is no binding (the key then waits for a confirm)."""
    assert KeyBinding.from_text(text) is None
