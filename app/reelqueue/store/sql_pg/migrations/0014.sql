-- Version 14 (issue 32): an account view kept by another process or machine (`accounts
-- refresh NAME`, the card's "Update", another machine's engine) wakes every listening
-- engine at once, like a change of the account itself: a balance read higher resumes an
-- account waiting on "credits low", a limit read higher gives more renders, without the
-- pump's safety net. `accounts refresh` writes only this table.
CREATE TRIGGER reelqueue_wake_account_views AFTER INSERT OR UPDATE OR DELETE
    ON account_views FOR EACH STATEMENT EXECUTE FUNCTION reelqueue_notify_wake();
