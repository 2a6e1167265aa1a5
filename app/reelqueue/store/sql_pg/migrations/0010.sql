-- An account as its provider last described it (v10, issue 32 item 2): one row per
-- account, written by the machine that holds its key, read by every machine; advice only
-- (nothing here starts or stops a render). Bad figures are NULL with the problem.
CREATE TABLE account_views (
    account         TEXT PRIMARY KEY,
    organization_id TEXT CHECK (length(organization_id) <= 200),
    balance_amount  DOUBLE PRECISION CHECK (balance_amount >= 0),
    balance_unit    TEXT CHECK (length(balance_unit) <= 20),
    -- per-model limits (domain/account_view.py limits_to_json), bounded
    limits          JSONB NOT NULL DEFAULT '[]' CHECK (octet_length(limits::text) <= 16384),
    read_at         DOUBLE PRECISION NOT NULL,
    read_by         TEXT NOT NULL DEFAULT '',
    problem         TEXT CHECK (length(problem) <= 500),
    CHECK ((balance_amount IS NULL) = (balance_unit IS NULL))
);
