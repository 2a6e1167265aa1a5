-- Version 9 (issue 20): fewer index entries per transition. A job's update changes its
-- state, which partial indexes name, so no transition is a HOT update: every index whose
-- condition the new row meets takes a new entry, at every transition. The indexes below
-- serve the same named queries (tests/store/test_pg_index_use.py) with entries for the
-- rows those queries look for only:
--   * jobs_live (account, in-flight rows only) replaces jobs_live_by_account (account,
--     state: every row, so a claim's count of its account's live renders walked every job
--     the account ever ran), jobs_in_flight (state) and jobs_by_lease_owner;
--   * jobs_unresolved: creates sent with no render recorded (reconciliation);
--   * ledger_by_event keeps the events a query looks up by kind; ledger_by_time becomes a
--     block range index (the ledger is written in time order).
DROP INDEX jobs_live_by_account;
DROP INDEX jobs_in_flight;
DROP INDEX jobs_by_lease_owner;
CREATE INDEX jobs_live ON jobs (account)
    WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');
CREATE INDEX jobs_unresolved ON jobs (account)
    WHERE client_token IS NOT NULL AND provider_job_id IS NULL;
DROP INDEX ledger_by_event;
CREATE INDEX ledger_by_event ON ledger (event, job_id)
    WHERE event IN ('spend', 'completed', 'handed_over');
DROP INDEX ledger_by_time;
CREATE INDEX ledger_by_time ON ledger USING brin (at);
