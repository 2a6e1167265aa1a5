-- Version 3: claims seek instead of walking. The one (provider, priority, id) index made a
-- claim step over every waiting job pinned to another account or still waiting out a
-- retry: 54 ms a claim with 100k such jobs ahead in a 1M queue, and a whole scan on every
-- pump pass for an account that could take nothing (benchmarks/bench_claim_scaling.py).
DROP INDEX jobs_claimable;
CREATE INDEX jobs_queued
    ON jobs (provider, COALESCE(account, pinned_account), priority DESC, id)
    WHERE state = 'QUEUED';
CREATE INDEX jobs_retry_due ON jobs (provider, run_after) WHERE state = 'RETRY_WAIT';
