"""Connecting an account from the window, against a fake provider registered for the test."""

from __future__ import annotations

from dataclasses import dataclass

import keyring
from keyring.backends import fail

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.base import ParamSpec, ProviderConfig
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until

GOOD_KEY = "fk-good-0123456789"


@dataclass
class KeyCheckingProvider:
    """An httpx-free provider: only check_key is used by the dialog."""

    config: ProviderConfig
    kind: str = "fakegui"
    supports_lookup: bool = False

    async def check_key(self) -> None:
        if self.config.api_key != GOOD_KEY:
            raise ProviderError("The fake provider refused the key (HTTP 401).",
                                error_class=ErrorClass.ACCOUNT, label=ErrorLabel.KEY_REJECTED,
                                status_code=401)


FAKE_KIND = "fakegui"
WITH_FAKE = builtin_registry().with_provider(ProviderInfo(
    kind=FAKE_KIND, title="Fake provider", default_base_url="https://fake.invalid",
    factory=lambda client, config: KeyCheckingProvider(config),  # type: ignore[arg-type,return-value]
    params=ParamSpec(models=("f-1",), default_capacity=5)))
"""The built-in providers and the fake one: the window is opened with this registry."""


@on_qloop
async def test_connect_an_account_with_a_key_check(windows: WindowHarness, app_ctx,
                                             memory_keyring) -> None:
    controller = await windows.open(app_ctx, start=False, providers=WITH_FAKE)
    assert controller.window.accounts.empty.isVisible()
    dialog = controller.keeper.show_account_dialog()
    assert not dialog.isModal()
    dialog.provider.setCurrentIndex(dialog.provider.findData(FAKE_KIND))
    assert dialog.capacity.value() == 5  # defaulted from the provider
    dialog.name.setText("Studio A")
    dialog.key.setText("fk-wrong")
    assert dialog.key.echoMode() == dialog.key.EchoMode.Password

    dialog.test_button.click()
    await until(lambda: "refused the key" in dialog.status.text())
    assert dialog.test_button.isEnabled()

    dialog.key.setText(GOOD_KEY)
    dialog.test_button.click()
    await until(lambda: dialog.status.text() == "Key accepted by the provider.")

    dialog.capacity.setValue(3)
    dialog.connect_button.click()
    await until(lambda: "Studio A" in controller.window.accounts.cards)
    assert dialog not in controller.keeper.open  # closed and released
    account = controller.summaries[0].account
    assert (account.name, account.provider, account.capacity) == ("Studio A", "fakegui", 3)
    assert account.key_ref == "account:Studio A"
    assert memory_keyring.get_password("ReelQueue", "account:Studio A") == GOOD_KEY
    card = controller.window.accounts.cards["Studio A"]
    assert card.chip.text() == "ready" and card.gauge.capacity == 3
    save_screenshot(card, "account-card-new")


@on_qloop
async def test_no_keyring_says_what_to_do_and_stores_nothing(windows: WindowHarness, app_ctx
                                                       ) -> None:
    controller = await windows.open(app_ctx, start=False, providers=WITH_FAKE)
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        dialog = controller.keeper.show_account_dialog()
        dialog.provider.setCurrentIndex(dialog.provider.findData(FAKE_KIND))
        dialog.name.setText("Studio B")
        dialog.key.setText(GOOD_KEY)
        dialog.connect_button.click()
        await until(lambda: "keyring" in dialog.status.text() and dialog.connect_button.isEnabled())
    finally:
        keyring.set_keyring(previous)
    assert "No usable OS keyring" in dialog.status.text()
    assert "plain text" in dialog.status.text()
    assert GOOD_KEY not in dialog.status.text()
    assert controller.summaries == []
    dialog.close()


@on_qloop
async def test_limit_and_pause_apply_live(windows: WindowHarness, app_ctx) -> None:
    from reelqueue.domain.models import AccountSpec
    from reelqueue.store.sqlite import SqliteStore

    app_ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(app_ctx.journal_path, now=1.0)
    store.add_account(AccountSpec("m1", "mock", 2), 1.0)
    store.close()
    controller = await windows.open(app_ctx, start=False)
    card = controller.window.accounts.cards["m1"]
    card.limit.setValue(5)
    await until(lambda: controller.summaries[0].account.capacity == 5, 5)
    card.pause_button.click()
    await until(lambda: card.chip.text() == "paused", 5)
    assert card.pause_button.text() == "Resume"
    card.pause_button.click()
    await until(lambda: card.chip.text() == "ready", 5)
