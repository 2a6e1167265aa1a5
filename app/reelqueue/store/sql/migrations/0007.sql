-- Version 7 (issue 19): PARKED also keeps a create whose outcome stayed unknown (its
-- client token, reconciled from the provider's records or resolved by the user), and a
-- render goes to at most one job (jobs_render_once); its error class is 'unknown', not a
-- failure. SQLite cannot change a CHECK in place, so the jobs table is rebuilt with the
-- same columns in the same order.
ALTER TABLE jobs RENAME TO jobs_before_v7;
CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY,
    batch_id        INTEGER NOT NULL REFERENCES batches(id),
    job_key         TEXT NOT NULL UNIQUE,
    row_number      INTEGER,
    name            TEXT NOT NULL DEFAULT '',
    prompt          TEXT NOT NULL,
    provider        TEXT NOT NULL,
    params          TEXT NOT NULL DEFAULT '{}',
    pinned_account  TEXT,
    priority        INTEGER NOT NULL DEFAULT 0,
    output_path     TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'QUEUED'
        CHECK (state IN ('QUEUED', 'CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING',
                         'RETRY_WAIT', 'COMPLETED', 'FAILED', 'CANCELLED', 'PARKED')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts    INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    account         TEXT,
    claim_token     TEXT,
    lease_owner     TEXT,
    lease_until     REAL,
    client_token    TEXT,
    provider_job_id TEXT,
    sub_status      TEXT,
    progress        REAL,
    run_after       REAL NOT NULL DEFAULT 0,
    output_size     INTEGER,
    output_sha256   TEXT,
    cost            REAL,
    error_class     TEXT
        CHECK (error_class IN ('retryable', 'permanent', 'account', 'unknown')),
    error_label     TEXT,
    error_message   TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    started_at      REAL,
    finished_at     REAL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    output_host     TEXT,
    -- finished <=> finished_at set
    CHECK ((state IN ('COMPLETED', 'FAILED', 'CANCELLED')) = (finished_at IS NOT NULL)),
    -- completed => the file was recorded
    CHECK (state <> 'COMPLETED' OR (output_size IS NOT NULL AND output_sha256 IS NOT NULL)),
    -- in flight <=> owned by a claim with a lease on an account
    CHECK ((state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING'))
           = (claim_token IS NOT NULL AND lease_owner IS NOT NULL
              AND lease_until IS NOT NULL AND account IS NOT NULL)),
    -- a provider job id only after the submission intent was committed
    CHECK (provider_job_id IS NULL OR client_token IS NOT NULL),
    -- parked = kept for the user, never created again by itself: a render (provider job
    -- id), or a create whose outcome stayed unknown (its client token; issue 19)
    CHECK (state <> 'PARKED' OR client_token IS NOT NULL)
);
INSERT INTO jobs SELECT * FROM jobs_before_v7;
DROP TABLE jobs_before_v7;
-- Claims seek, never walk past jobs they cannot take: queued jobs by provider, the account
-- they are bound to (pinned, or holding that account's render) and priority; retry waits
-- by due time (queries.sql, next_claimable).
CREATE INDEX jobs_queued
    ON jobs (provider, COALESCE(account, pinned_account), priority DESC, id)
    WHERE state = 'QUEUED';
CREATE INDEX jobs_retry_due ON jobs (provider, run_after) WHERE state = 'RETRY_WAIT';
CREATE INDEX jobs_live_by_account ON jobs (account, state);
CREATE INDEX jobs_by_batch ON jobs (batch_id, id);
CREATE INDEX jobs_by_lease_owner ON jobs (lease_owner) WHERE lease_owner IS NOT NULL;
CREATE INDEX jobs_in_flight ON jobs (state)
    WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING', 'RETRY_WAIT');
-- A render goes to at most one job (reconciliation's one-job rule, issue 19).
CREATE UNIQUE INDEX jobs_render_once ON jobs (provider, account, provider_job_id)
    WHERE provider_job_id IS NOT NULL;
