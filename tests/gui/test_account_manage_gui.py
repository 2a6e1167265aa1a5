"""Managing an account from its card (issue 23): a new key (checked, kept in the keyring,
never shown), limit, daily cap, address, "Confirm on this machine", and removal whose
confirmation says what becomes of the waiting jobs."""

from __future__ import annotations

import logging
import time

import pytest
from PySide6.QtWidgets import QLineEdit, QMessageBox

from reelqueue.application import accounts, status
from reelqueue.application.accounts import AccountDraft
from reelqueue.domain.models import Account, AccountStatus, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.ui.account_manage import ManageAccountDialog, parse_cap
from reelqueue.ui.accounts_view import CONFIRM_HERE
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until
from tests.gui.test_accounts_gui import FAKE_KIND, GOOD_KEY, WITH_FAKE

OLD_KEY = "fk-old-0000000000"


async def _open_with_account(windows: WindowHarness, app_ctx):  # type: ignore[no-untyped-def]
    controller = await windows.open(app_ctx, start=False, providers=WITH_FAKE)
    app = controller.session.app
    for name in ("Studio A", "Studio B"):
        await accounts.add_account(app, AccountDraft(name, FAKE_KIND, 2, key=OLD_KEY),
                                   check=False)
    await controller.refresh_accounts()
    await until(lambda: "Studio A" in controller.window.accounts.cards)
    card = controller.window.accounts.cards["Studio A"]
    card.manage_button.click()
    dialog = controller.manage.dialogs["Studio A"]
    assert dialog.isVisible() and not dialog.isModal()
    return controller, dialog


@on_qloop
async def test_change_the_key_checked_and_kept_never_shown(
        windows: WindowHarness, app_ctx, memory_keyring, caplog: pytest.LogCaptureFixture
        ) -> None:
    caplog.set_level(logging.DEBUG, logger="reelqueue")
    _controller, dialog = await _open_with_account(windows, app_ctx)
    ref = "account:Studio A"
    assert dialog.key.echoMode() == QLineEdit.EchoMode.Password
    dialog.key.setText("fk-wrong-999999999")
    dialog.key_button.click()
    await until(lambda: dialog.status.text().startswith("The key was not changed"))
    assert "refused the key" in dialog.status.text()
    assert memory_keyring.get_password("ReelQueue", ref) == OLD_KEY, "nothing stored"
    dialog.key.setText(GOOD_KEY)
    dialog.key_button.click()
    assert dialog.key.text() == "", "the key leaves the field once handed over"
    await until(lambda: "the new key is kept in this machine's keyring" in
                dialog.status.text())
    assert memory_keyring.get_password("ReelQueue", ref) == GOOD_KEY
    everything = dialog.status.text() + caplog.text + "".join(
        w.text() for w in dialog.findChildren(QLineEdit))
    assert GOOD_KEY not in everything and "fk-wrong" not in everything
    save_screenshot(dialog, "account-manage")


@on_qloop
async def test_limit_daily_cap_and_address_are_saved(windows: WindowHarness, app_ctx,
                                                     memory_keyring) -> None:
    controller, dialog = await _open_with_account(windows, app_ctx)
    assert not dialog.confirm_box.isVisible()
    assert dialog.url_note.text() == ("Changing the address: the key is sent there from "
                                      "now on.")
    dialog.capacity.setValue(5)
    dialog.daily_cap.setText("twelve")
    dialog.save_button.click()
    assert "is not an amount" in dialog.status.text()
    dialog.daily_cap.setText("$12.50")
    dialog.base_url.setText("https://gateway.example.com/v1")
    dialog.save_button.click()
    await until(lambda: dialog.status.text().startswith("Account Studio A saved."))
    journal = controller.session.app.journal
    account = await journal.get_account("Studio A")
    assert account is not None
    assert (account.capacity, account.settings.get("daily_cap"), account.base_url) == \
        (5, 12.5, "https://gateway.example.com/v1")
    await until(lambda: controller.window.accounts.cards["Studio A"].limit.value() == 5)
    # Cleared: no cap.
    dialog.daily_cap.setText("")
    dialog.save_button.click()
    await until(lambda: dialog.save_button.isEnabled() and "saved" in dialog.status.text())
    await until(lambda: controller.summaries[0].account.settings.get("daily_cap") is None)
    dialog.save_button.click()
    assert dialog.status.text() == "Nothing to change."


@on_qloop
async def test_confirm_on_this_machine_after_the_address_changed_elsewhere(
        windows: WindowHarness, app_ctx, memory_keyring) -> None:
    controller, dialog = await _open_with_account(windows, app_ctx)
    dialog.close()
    await until(lambda: "Studio A" not in controller.manage.dialogs)
    # Another machine (or a hand edit) changed the address in the journal: this machine's
    # key is bound to the old one and is not sent until confirmed.
    journal = controller.session.app.journal
    await journal.update_account("Studio A", time.time(), base_url="https://other.example.com")
    await controller.refresh_accounts()
    # The card says so before anything is claimed (it said "ready" until the engine asked
    # for the key), and Manage… is where to confirm.
    card = controller.window.accounts.cards["Studio A"]
    await until(lambda: card.chip.text() == CONFIRM_HERE)
    assert "other.example.com" in card.chip.toolTip() and "Manage" in card.chip.toolTip()
    assert controller.window.accounts.cards["Studio B"].chip.text() == "ready"
    controller.window.accounts.cards["Studio A"].manage_button.click()
    dialog = controller.manage.dialogs["Studio A"]
    await until(lambda: dialog.confirm_box.isVisible())
    assert "confirm" in dialog.confirm_label.text()
    assert "other.example.com" in dialog.confirm_label.text(), dialog.confirm_label.text()
    dialog.confirm_button.click()
    await until(lambda: "now sends its key to" in dialog.status.text())
    await until(lambda: not dialog.confirm_box.isVisible())
    assert "other.example.com" in dialog.status.text()
    await until(lambda: card.chip.text() == "ready")


@on_qloop
async def test_confirm_binds_only_the_address_the_dialog_showed(
        windows: WindowHarness, app_ctx, memory_keyring) -> None:
    """Issue 34 (N6-N13 f): the address moved again on the team database after the
    dialog showed it; Confirm bound the key to the new one, which the user never saw."""
    controller, dialog = await _open_with_account(windows, app_ctx)
    dialog.close()
    await until(lambda: "Studio A" not in controller.manage.dialogs)
    journal = controller.session.app.journal
    await journal.update_account("Studio A", time.time(), base_url="https://seen.example.com")
    await controller.refresh_accounts()
    controller.window.accounts.cards["Studio A"].manage_button.click()
    dialog = controller.manage.dialogs["Studio A"]
    await until(lambda: dialog.confirm_box.isVisible())
    assert "https://seen.example.com" in dialog.confirm_label.text()
    await journal.update_account("Studio A", time.time(),
                                 base_url="https://moved.example.com")
    dialog.confirm_button.click()
    await until(lambda: "nothing was confirmed" in dialog.status.text())
    assert "moved.example.com" in dialog.status.text()
    assert "--expect-url" not in dialog.status.text(), "the window has no such option"
    trusted = controller.session.app.trusted_keys
    binding = trusted.binding("Studio A")
    assert binding is None or "moved.example.com" not in binding.describe()
    # Shown again with the address it names now, it is confirmed for that one.
    await until(lambda: "https://moved.example.com" in dialog.confirm_label.text())
    dialog.confirm_button.click()
    await until(lambda: "now sends its key to" in dialog.status.text())
    assert "moved.example.com" in dialog.status.text()


@on_qloop
async def test_remove_says_what_becomes_of_the_waiting_jobs(
        windows: WindowHarness, app_ctx, memory_keyring) -> None:
    controller, dialog = await _open_with_account(windows, app_ctx)
    journal = controller.session.app.journal
    batch = await journal.create_batch(BatchSpec("b", "s.csv", str(app_ctx.videos_dir)),
                                       time.time())
    specs = [JobSpec(f"k{i}", f"p{i}", FAKE_KIND, str(app_ctx.videos_dir / f"{i}.mp4"),
                     pinned_account="Studio A" if i == 0 else None) for i in range(3)]
    await journal.add_jobs(batch.id, specs, time.time())
    dialog.remove_button.click()
    await until(lambda: controller.manage.box is not None
                and controller.manage.box.isVisible())
    box = controller.manage.box
    assert box is not None
    text = box.informativeText()
    assert text.startswith("Removing “Studio A” deletes the account from ReelQueue and "
                           "its key from this machine's keyring.")
    assert "No job is cancelled." in text
    assert ("1 waiting job can run only on “Studio A” (pinned to it, or holding a render "
            "it started): it stays waiting and runs only if an account of that name is "
            "connected again; cancel it if you do not want that.") in text
    assert ("2 waiting Fake provider jobs not tied to it go to your other Fake provider "
            "accounts (Studio B).") in text
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    save_screenshot(box, "account-remove-confirm")
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert await journal.get_account("Studio A") is not None, "cancelled: nothing done"
    dialog.remove_button.click()
    await until(lambda: controller.manage.box is not box
                and controller.manage.box is not None and controller.manage.box.isVisible())
    remove = next(b for b in controller.manage.box.buttons() if b.text() == "Remove")
    remove.click()
    await until(lambda: "Studio A" not in controller.window.accounts.cards)
    assert await journal.get_account("Studio A") is None
    assert memory_keyring.get_password("ReelQueue", "account:Studio A") is None
    pinned = [j for j in await journal.list_jobs() if j.pinned_account == "Studio A"]
    assert [j.state.value for j in pinned] == ["QUEUED"], "the pinned job stays waiting"
    await until(lambda: "Studio A" not in controller.manage.dialogs)


def _account(**changes: object) -> Account:
    values: dict[str, object] = dict(
        name="Team A", provider="openai-compat", capacity=2, position=0, enabled=True,
        base_url="https://gw.example.com/v1", key_ref="team:1:Team A",
        status=AccountStatus.READY, status_detail=None, cooldown_until=None,
        settings={"model": "m-1"}, created_at=0.0)
    values.update(changes)
    return Account(**values)  # type: ignore[arg-type]


def test_a_team_account_offers_no_rename_and_says_an_address_needs_confirming(qtbot) -> None:
    dialog = ManageAccountDialog(_account(), "OpenAI-compatible gateway", team=True)
    qtbot.addWidget(dialog)
    dialog.show()
    labels = " ".join(label.text() for label in dialog.findChildren(type(dialog.status)))
    assert "cannot be renamed" in labels
    assert "every other machine of the team must confirm it first" in dialog.url_note.text()
    assert "reelqueue accounts confirm Team A" in dialog.url_note.text()
    assert dialog.model is not None and dialog.model.text() == "m-1"
    dialog.model.setText("m-2")
    change, problem = dialog.change()
    assert problem is None and change is not None and change.model == "m-2"
    with qtbot.waitSignal(dialog.confirmRequested) as blocker:
        dialog.set_confirm("waits for 'accounts confirm'", "https://gw.example.com/v1")
        dialog.confirm_button.click()
    assert blocker.args == ["Team A", "https://gw.example.com/v1"]
    local = ManageAccountDialog(_account(name="Solo"), "OpenAI-compatible gateway",
                                team=False)
    qtbot.addWidget(local)
    assert "cannot be renamed" not in " ".join(
        label.text() for label in local.findChildren(type(local.status)))


def test_parse_cap() -> None:
    assert parse_cap("") == (None, None)
    assert parse_cap("$1,200.5") == (1200.5, None)
    assert parse_cap("-1")[1] is not None


@on_qloop
async def test_a_removed_account_s_parked_job_and_spend_stay_in_sight(
        windows: WindowHarness, app_ctx, memory_keyring) -> None:
    """Issue 34 (N6-N13 b): an account whose only job was parked (its render possibly
    billed) could be removed; its card went with its spend, and its jobs could no longer
    be picked out by account."""
    controller, dialog = await _open_with_account(windows, app_ctx)
    dialog.close()
    journal = controller.session.app.journal
    batch = await journal.create_batch(BatchSpec("b", "s.csv", str(app_ctx.videos_dir)),
                                       time.time())
    await journal.add_jobs(batch.id, [JobSpec(
        "k0", "p0", FAKE_KIND, str(app_ctx.videos_dir / "0.mp4"), pinned_account="Studio A",
        metadata={"price": 0.8})], time.time())
    claim = await journal.claim_next_job(ClaimParams("Studio A", "inst", time.time(), 60.0,
                                                     0.0))
    assert claim is not None
    assert await journal.mark_submitting(claim.token, "ct-1", time.time())
    assert await journal.record_submitted(claim.token, "pj-1", time.time())
    assert await journal.park_job(claim.token, JobError("retryable", "parked", "crashed"),
                                  time.time())
    await accounts.remove_account(controller.session.app, "Studio A")
    await controller.load_rows()
    await controller.refresh_accounts()
    window = controller.window
    assert "Studio A" not in window.accounts.cards
    await until(lambda: "Studio A" in window.queue_label.text())
    assert "Removed: Studio A spent $0.80, 1 parked" in window.queue_label.text(), \
        window.queue_label.text()
    index = window.account_filter.findData("Studio A")
    assert index >= 0 and window.account_filter.itemText(index) == "Studio A (removed)"
    window.show_account("Studio A")
    assert window.current_filter().account == "Studio A"
    money = await status.money(controller.session.app)
    assert money.spent["Studio A"] == pytest.approx(0.8)

