-- An account as its provider last described it (v13, issue 32 item 2): one row per
-- account, written by whichever process read it, read by every process; advice only
-- (nothing here starts or stops a render). Bad figures are NULL with the problem.
CREATE TABLE account_views (
    account         TEXT PRIMARY KEY,
    organization_id TEXT CHECK (length(organization_id) <= 200),
    balance_amount  REAL CHECK (balance_amount >= 0),
    balance_unit    TEXT CHECK (length(balance_unit) <= 20),
    -- per-model limits, JSON (domain/account_view.py limits_to_json), bounded
    limits          TEXT NOT NULL DEFAULT '[]' CHECK (length(limits) <= 16384),
    read_at         REAL NOT NULL,
    read_by         TEXT NOT NULL DEFAULT '',
    problem         TEXT CHECK (length(problem) <= 500),
    CHECK ((balance_amount IS NULL) = (balance_unit IS NULL))
);
