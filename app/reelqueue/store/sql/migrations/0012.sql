-- Version 12 (issue 20, the journal's speed): the CHECK constraints of jobs name their
-- states as "=" tests joined by OR instead of IN lists. SQLite codes an IN list of more
-- than two constants as a lookup table that it builds every time the constraint is
-- checked: four of them (the states, finished, in flight, the error class) on every
-- transition of a job, about a sixth of the instructions of a job's life
-- (docs/benchmarks.md). The constraints accept and refuse exactly the same rows
-- (tests/store/test_check_forms.py). SQLite cannot change a CHECK in place, so the table is
-- rebuilt as in 0007 (https://www.sqlite.org/lang_altertable.html#otheralter; no view or
-- trigger names jobs, and no foreign key points at it): the same columns in the same
-- order, every row copied with its id, every index made again.
-- The ledger's index by event keeps only the events a query looks up by name: the
-- claimed, submitted, downloading... entries of every job stop costing an index page in
-- each transition's commit. Every named query is planned with the same indexes as before.
ALTER TABLE jobs RENAME TO jobs_before_v12;
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
    -- '<batch folder>/<file>', relative to the videos folder (v9, issue 23)
    output_path     TEXT NOT NULL,
    -- The CHECKs name their states as "=" tests joined by OR, not as IN lists: SQLite codes
    -- an IN list of more than two constants as a lookup table it builds each time it
    -- checks, and every transition checks these (schema 12, docs/benchmarks.md). Same
    -- values accepted and refused (tests/store/test_check_forms.py).
    state           TEXT NOT NULL DEFAULT 'QUEUED'
        CHECK (state = 'QUEUED' OR state = 'CLAIMED' OR state = 'SUBMITTING'
               OR state = 'RENDERING' OR state = 'DOWNLOADING' OR state = 'RETRY_WAIT'
               OR state = 'COMPLETED' OR state = 'FAILED' OR state = 'CANCELLED'
               OR state = 'PARKED'),
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
        CHECK (error_class = 'retryable' OR error_class = 'permanent'
               OR error_class = 'account' OR error_class = 'unknown'),
    error_label     TEXT,
    error_message   TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    started_at      REAL,
    finished_at     REAL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    output_host     TEXT,
    -- the temporary file a download is written to, beside output_path (issue 22, v8)
    output_part     TEXT,
    -- where a job may render when its row named several providers (issue 24, JSON:
    -- domain/routes.py); provider and params are its current candidate's
    route           TEXT,
    -- its usable candidates in rank order, '|veo|runway|' ('~|...|' under spread): the
    -- claim's filter (store/routing.py)
    route_order     TEXT,
    -- finished <=> finished_at set
    CHECK ((state = 'COMPLETED' OR state = 'FAILED' OR state = 'CANCELLED')
           = (finished_at IS NOT NULL)),
    -- completed => the file was recorded
    CHECK (state <> 'COMPLETED' OR (output_size IS NOT NULL AND output_sha256 IS NOT NULL)),
    -- in flight <=> owned by a claim with a lease on an account
    CHECK ((state = 'CLAIMED' OR state = 'SUBMITTING' OR state = 'RENDERING'
            OR state = 'DOWNLOADING')
           = (claim_token IS NOT NULL AND lease_owner IS NOT NULL
              AND lease_until IS NOT NULL AND account IS NOT NULL)),
    -- a provider job id only after the submission intent was committed
    CHECK (provider_job_id IS NULL OR client_token IS NOT NULL),
    -- parked = kept for the user, never created again by itself: a render (provider job
    -- id), or a create whose outcome stayed unknown (its client token; issue 19)
    CHECK (state <> 'PARKED' OR client_token IS NOT NULL)
);
INSERT INTO jobs SELECT * FROM jobs_before_v12;
DROP TABLE jobs_before_v12;
-- Claims seek, never walk past jobs they cannot take: queued jobs by provider, the account
-- they are bound to (pinned, or holding that account's render) and priority; retry waits
-- by due time (queries.sql, next_claimable).
CREATE INDEX jobs_queued
    ON jobs (provider, COALESCE(account, pinned_account), priority DESC, id)
    WHERE state = 'QUEUED';
CREATE INDEX jobs_retry_due ON jobs (provider, run_after) WHERE state = 'RETRY_WAIT';
CREATE INDEX jobs_live_by_account ON jobs (account, state);
CREATE INDEX jobs_by_batch ON jobs (batch_id, id);
-- routed jobs that may still move to another provider (no create sent: issue 24)
CREATE INDEX jobs_routed ON jobs (priority DESC, id)
    WHERE route IS NOT NULL AND state IN ('QUEUED', 'RETRY_WAIT')
      AND provider_job_id IS NULL AND client_token IS NULL;
CREATE INDEX jobs_by_lease_owner ON jobs (lease_owner) WHERE lease_owner IS NOT NULL;
-- A render goes to at most one job (reconciliation's one-job rule, issue 19).
CREATE UNIQUE INDEX jobs_render_once ON jobs (provider, account, provider_job_id)
    WHERE provider_job_id IS NOT NULL;
-- The ledger is rebuilt too: its seq loses AUTOINCREMENT, whose sqlite_sequence page every
-- commit rewrote (5 of a job life's 42 WAL pages). A seq is still never given twice: the
-- next is MAX(seq) + 1 and pruning keeps the newest entry (queries.sql); and if pruning
-- under schema 11 had deleted the newest entries, the highest seq ever given is kept by a
-- "seq_kept" entry, so the first new entry comes after it.
ALTER TABLE ledger RENAME TO ledger_before_v12;
CREATE TABLE ledger (
    seq         INTEGER PRIMARY KEY,
    at          REAL NOT NULL,
    event       TEXT NOT NULL,
    job_id      INTEGER,
    account     TEXT,
    claim_token TEXT,
    detail      TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO ledger SELECT * FROM ledger_before_v12;
INSERT INTO ledger (seq, at, event, detail)
    SELECT s.seq, COALESCE((SELECT MAX(at) FROM ledger), 0.0), 'seq_kept',
           '{"why": "the highest seq given before schema 12"}'
      FROM sqlite_sequence AS s
     WHERE s.name = 'ledger_before_v12'
       AND s.seq > (SELECT COALESCE(MAX(seq), 0) FROM ledger);
DROP TABLE ledger_before_v12;
CREATE INDEX ledger_by_job ON ledger (job_id, seq) WHERE job_id IS NOT NULL;
CREATE INDEX ledger_by_event ON ledger (event, job_id)
    WHERE event = 'submitting' OR event = 'completed' OR event = 'spend'
       OR event = 'handed_over' OR event = 'requeued';
CREATE INDEX ledger_by_time ON ledger (at) WHERE event = 'spend';
CREATE TRIGGER ledger_append_only BEFORE UPDATE ON ledger
BEGIN
    SELECT RAISE(ABORT, 'the ledger is append-only');
END;
