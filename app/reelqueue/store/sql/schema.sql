-- ReelQueue journal, current schema (version 15). A fresh journal is made from this file;
-- an older one is brought here by migrations/NNNN.sql. tests/store/test_schema.py proves
-- both roads end in the same schema.

CREATE TABLE batches (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    source_path  TEXT NOT NULL,
    -- a folder name relative to each machine's videos folder (v9, issue 23)
    output_dir   TEXT NOT NULL,
    max_attempts INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    settings     TEXT NOT NULL DEFAULT '{}',
    created_at   REAL NOT NULL
);

CREATE TABLE accounts (
    name           TEXT PRIMARY KEY,
    provider       TEXT NOT NULL,
    capacity       INTEGER NOT NULL CHECK (capacity >= 1),
    position       INTEGER NOT NULL,
    enabled        INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    base_url       TEXT,
    key_ref        TEXT,
    status         TEXT NOT NULL DEFAULT 'ready'
        CHECK (status IN ('ready', 'key_rejected', 'out_of_credits', 'rate_limited',
                          'key_missing')),
    status_detail  TEXT,
    cooldown_until REAL,
    settings       TEXT NOT NULL DEFAULT '{}',
    created_at     REAL NOT NULL
);

-- The review columns (decision ... decision_version, v16, issue 35 item 2: a take's pick or
-- reject, rating, when, by whom and the version a change names) follow route_order as
-- ALTER TABLE wrote them (migrations/0016.sql): tests/store/test_schema.py compares the
-- text of the two roads, so they carry no comment inside the table.
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
    route_order     TEXT, decision TEXT NOT NULL DEFAULT 'none' CHECK (decision = 'none' OR decision = 'pick' OR decision = 'reject'), rating INTEGER CHECK (rating >= 1 AND rating <= 5), decided_at REAL, decided_by TEXT CHECK (length(decided_by) <= 200), decision_version INTEGER NOT NULL DEFAULT 0 CHECK (decision_version >= 0),
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

-- seq is never given twice, without AUTOINCREMENT (whose sqlite_sequence page every
-- commit rewrote: 5 of a job life's 42 WAL pages; schema 12): SQLite gives the next row
-- MAX(seq) + 1, and pruning (prune_ledger) always keeps the newest entry.
CREATE TABLE ledger (
    seq         INTEGER PRIMARY KEY,
    at          REAL NOT NULL,
    event       TEXT NOT NULL,
    job_id      INTEGER,
    account     TEXT,
    claim_token TEXT,
    detail      TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX ledger_by_job ON ledger (job_id, seq) WHERE job_id IS NOT NULL;
-- Only the events a query looks up by name (the doctor's completed, the spend of a batch,
-- takeovers, unresolved submissions, crash requeues: tests/store/test_index_use.py): the
-- claimed, submitted, downloading... entries of every job are not written into it
-- (schema 12, issue 20: three index pages fewer per job life). "=" tests joined by OR, so
-- that a query naming one of them is planned with it.
CREATE INDEX ledger_by_event ON ledger (event, job_id)
    WHERE event = 'submitting' OR event = 'completed' OR event = 'spend'
       OR event = 'handed_over' OR event = 'requeued';
CREATE INDEX ledger_by_time ON ledger (at) WHERE event = 'spend';
-- A model's daily limit counts the creates written on the account since its view was read
-- (v14, issue 32 item 3: queries.sql creates_since).
CREATE INDEX ledger_creates ON ledger (account, at) WHERE event = 'submitting';

-- The ledger is append-only: rows are never changed; only start-up pruning deletes old ones.
CREATE TRIGGER ledger_append_only BEFORE UPDATE ON ledger
BEGIN
    SELECT RAISE(ABORT, 'the ledger is append-only');
END;

-- Tokens of the HTTP API (issue 14): a salted sha256 only; token_id is the token's public part.
CREATE TABLE api_tokens (
    name        TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL UNIQUE,
    salt        BLOB NOT NULL,
    digest      BLOB NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'submit', 'admin')),
    created_at  REAL NOT NULL
);

-- An account as its provider last described it (v13, issue 32 item 2): one row per
-- account, written by whichever process read it, read by every process; the claim
-- reads it in its transaction (limits and balance: v14 / v11, issue 32 items 3 and 4).
-- Bad figures are NULL with the problem.
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

-- Listings never read a long value whole (issue 34). SQLite must read a text to measure
-- it (its octet_length skips that from 3.43 only), and a listing of rows rewritten with
-- 50 MB values held five of them at once: +250 MB for a page of 500 jobs. So each write
-- of a job's listed text measures it once, here, and keeps the row's listed values (cut
-- with the marker, like the listing's bounds in store/listing.py) in job_cuts when any is
-- over its bound; a listing (queries.sql listed_job_columns) reads those instead of the
-- row's own. A row without an entry has every value within its bounds. Only the texts an
-- import or a failure writes: the short words a transition writes at every step (account,
-- tokens, ids) are cut by the listing itself, so the engine's own writes seldom fire this.
CREATE TABLE job_cuts (
    job_id INTEGER PRIMARY KEY,
    job_key TEXT,
    name TEXT,
    prompt TEXT,
    provider TEXT,
    params TEXT,
    pinned_account TEXT,
    output_path TEXT,
    error_message TEXT,
    metadata TEXT,
    route TEXT
);

CREATE TRIGGER job_cuts_insert AFTER INSERT ON jobs
WHEN length(NEW.job_key) > 1024
  OR length(NEW.name) > 200
  OR length(NEW.prompt) > 2000
  OR length(NEW.provider) > 200
  OR length(CAST(NEW.params AS BLOB)) > 16384 OR json_valid(NEW.params) = 0
  OR length(NEW.pinned_account) > 200
  OR length(NEW.output_path) > 1024
  OR length(NEW.error_message) > 4000
  OR length(CAST(NEW.metadata AS BLOB)) > 16384 OR json_valid(NEW.metadata) = 0
  OR length(NEW.route) > 64000
BEGIN
    DELETE FROM job_cuts WHERE job_id = NEW.id;
    INSERT INTO job_cuts (job_id, job_key, name, prompt, provider, params, pinned_account, output_path, error_message, metadata, route)
    SELECT NEW.id,
    CASE WHEN length(NEW.job_key) > 1024 THEN substr(NEW.job_key, 1, 1024) || '… [cut: '
              || length(CAST(NEW.job_key AS BLOB)) || ' bytes]' ELSE NEW.job_key END,
    CASE WHEN length(NEW.name) > 200 THEN substr(NEW.name, 1, 200) || '… [cut: '
              || length(CAST(NEW.name AS BLOB)) || ' bytes]' ELSE NEW.name END,
    CASE WHEN length(NEW.prompt) > 2000 THEN substr(NEW.prompt, 1, 2000) || '… [cut: '
              || length(CAST(NEW.prompt AS BLOB)) || ' bytes]' ELSE NEW.prompt END,
    CASE WHEN length(NEW.provider) > 200 THEN substr(NEW.provider, 1, 200) || '… [cut: '
              || length(CAST(NEW.provider AS BLOB)) || ' bytes]' ELSE NEW.provider END,
    CASE WHEN length(CAST(NEW.params AS BLOB)) > 16384
           THEN json_object('cut', length(CAST(NEW.params AS BLOB)) || ' bytes')
         WHEN json_valid(NEW.params) = 0 THEN json_object('cut', 'not valid JSON')
         ELSE NEW.params END,
    CASE WHEN length(NEW.pinned_account) > 200 THEN substr(NEW.pinned_account, 1, 200) || '… [cut: '
              || length(CAST(NEW.pinned_account AS BLOB)) || ' bytes]' ELSE NEW.pinned_account END,
    CASE WHEN length(NEW.output_path) > 1024 THEN substr(NEW.output_path, 1, 1024) || '… [cut: '
              || length(CAST(NEW.output_path AS BLOB)) || ' bytes]' ELSE NEW.output_path END,
    CASE WHEN length(NEW.error_message) > 4000 THEN substr(NEW.error_message, 1, 4000) || '… [cut: '
              || length(CAST(NEW.error_message AS BLOB)) || ' bytes]' ELSE NEW.error_message END,
    CASE WHEN length(CAST(NEW.metadata AS BLOB)) > 16384
           THEN json_object('cut', length(CAST(NEW.metadata AS BLOB)) || ' bytes')
         WHEN json_valid(NEW.metadata) = 0 THEN json_object('cut', 'not valid JSON')
         ELSE NEW.metadata END,
    CASE WHEN length(NEW.route) > 64000 THEN NULL ELSE NEW.route END
    WHERE length(NEW.job_key) > 1024
    OR length(NEW.name) > 200
    OR length(NEW.prompt) > 2000
    OR length(NEW.provider) > 200
    OR length(CAST(NEW.params AS BLOB)) > 16384 OR json_valid(NEW.params) = 0
    OR length(NEW.pinned_account) > 200
    OR length(NEW.output_path) > 1024
    OR length(NEW.error_message) > 4000
    OR length(CAST(NEW.metadata AS BLOB)) > 16384 OR json_valid(NEW.metadata) = 0
    OR length(NEW.route) > 64000;
END;

CREATE TRIGGER job_cuts_update AFTER UPDATE OF job_key, name, prompt, provider, params, pinned_account, output_path, error_message, metadata, route ON jobs
WHEN length(NEW.job_key) > 1024
  OR length(NEW.name) > 200
  OR length(NEW.prompt) > 2000
  OR length(NEW.provider) > 200
  OR length(CAST(NEW.params AS BLOB)) > 16384 OR json_valid(NEW.params) = 0
  OR length(NEW.pinned_account) > 200
  OR length(NEW.output_path) > 1024
  OR length(NEW.error_message) > 4000
  OR length(CAST(NEW.metadata AS BLOB)) > 16384 OR json_valid(NEW.metadata) = 0
  OR length(NEW.route) > 64000
  OR EXISTS (SELECT 1 FROM job_cuts WHERE job_id = NEW.id)
BEGIN
    DELETE FROM job_cuts WHERE job_id = NEW.id;
    INSERT INTO job_cuts (job_id, job_key, name, prompt, provider, params, pinned_account, output_path, error_message, metadata, route)
    SELECT NEW.id,
    CASE WHEN length(NEW.job_key) > 1024 THEN substr(NEW.job_key, 1, 1024) || '… [cut: '
              || length(CAST(NEW.job_key AS BLOB)) || ' bytes]' ELSE NEW.job_key END,
    CASE WHEN length(NEW.name) > 200 THEN substr(NEW.name, 1, 200) || '… [cut: '
              || length(CAST(NEW.name AS BLOB)) || ' bytes]' ELSE NEW.name END,
    CASE WHEN length(NEW.prompt) > 2000 THEN substr(NEW.prompt, 1, 2000) || '… [cut: '
              || length(CAST(NEW.prompt AS BLOB)) || ' bytes]' ELSE NEW.prompt END,
    CASE WHEN length(NEW.provider) > 200 THEN substr(NEW.provider, 1, 200) || '… [cut: '
              || length(CAST(NEW.provider AS BLOB)) || ' bytes]' ELSE NEW.provider END,
    CASE WHEN length(CAST(NEW.params AS BLOB)) > 16384
           THEN json_object('cut', length(CAST(NEW.params AS BLOB)) || ' bytes')
         WHEN json_valid(NEW.params) = 0 THEN json_object('cut', 'not valid JSON')
         ELSE NEW.params END,
    CASE WHEN length(NEW.pinned_account) > 200 THEN substr(NEW.pinned_account, 1, 200) || '… [cut: '
              || length(CAST(NEW.pinned_account AS BLOB)) || ' bytes]' ELSE NEW.pinned_account END,
    CASE WHEN length(NEW.output_path) > 1024 THEN substr(NEW.output_path, 1, 1024) || '… [cut: '
              || length(CAST(NEW.output_path AS BLOB)) || ' bytes]' ELSE NEW.output_path END,
    CASE WHEN length(NEW.error_message) > 4000 THEN substr(NEW.error_message, 1, 4000) || '… [cut: '
              || length(CAST(NEW.error_message AS BLOB)) || ' bytes]' ELSE NEW.error_message END,
    CASE WHEN length(CAST(NEW.metadata AS BLOB)) > 16384
           THEN json_object('cut', length(CAST(NEW.metadata AS BLOB)) || ' bytes')
         WHEN json_valid(NEW.metadata) = 0 THEN json_object('cut', 'not valid JSON')
         ELSE NEW.metadata END,
    CASE WHEN length(NEW.route) > 64000 THEN NULL ELSE NEW.route END
    WHERE length(NEW.job_key) > 1024
    OR length(NEW.name) > 200
    OR length(NEW.prompt) > 2000
    OR length(NEW.provider) > 200
    OR length(CAST(NEW.params AS BLOB)) > 16384 OR json_valid(NEW.params) = 0
    OR length(NEW.pinned_account) > 200
    OR length(NEW.output_path) > 1024
    OR length(NEW.error_message) > 4000
    OR length(CAST(NEW.metadata AS BLOB)) > 16384 OR json_valid(NEW.metadata) = 0
    OR length(NEW.route) > 64000;
END;

CREATE TRIGGER job_cuts_delete AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_cuts WHERE job_id = OLD.id;
END;
