-- Limits from the provider (v11, issue 32 item 3): a model's daily limit counts the creates
-- written on the account since its view was read (queries.sql creates_since); only the
-- submitting entries, by account and time.
CREATE INDEX ledger_creates ON ledger (account, at) WHERE event = 'submitting';
