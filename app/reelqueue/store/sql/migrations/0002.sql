-- Version 2: the partial index claims walk (claim cost independent of queue size), lease
-- and in-flight indexes for heartbeats and recovery, ledger indexes for doctor and pruning,
-- and the append-only guard on the ledger.
CREATE INDEX jobs_claimable ON jobs (provider, priority DESC, id)
    WHERE state IN ('QUEUED', 'RETRY_WAIT');
CREATE INDEX jobs_by_lease_owner ON jobs (lease_owner) WHERE lease_owner IS NOT NULL;
CREATE INDEX jobs_in_flight ON jobs (state)
    WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING', 'RETRY_WAIT');
CREATE INDEX ledger_by_event ON ledger (event, job_id);
CREATE INDEX ledger_by_time ON ledger (at);

CREATE TRIGGER ledger_append_only BEFORE UPDATE ON ledger
BEGIN
    SELECT RAISE(ABORT, 'the ledger is append-only');
END;
