-- Version 4: one clock decides (issue 19, DESIGN.md invariant 14). Every time compared
-- across machines is the server's, read in the statements themselves; the instances
-- registry says how far each machine's clock is from it, and how long its leases are.
-- instances.clock_offset: the instance's clock minus the server's, in seconds, as it last
-- measured it (start and every heartbeat); NULL before it measured.
-- instances.lease_seconds: the lease its claims are given; an instance whose heartbeat is
-- older than that is silent (doctor, the Instances view). NULL: written by version 3.
ALTER TABLE instances ADD COLUMN clock_offset DOUBLE PRECISION;
ALTER TABLE instances ADD COLUMN lease_seconds DOUBLE PRECISION
    CONSTRAINT instances_lease_seconds_check CHECK (lease_seconds > 0);

-- Version 4 (issue 19): PARKED also keeps a create whose outcome stayed unknown (its client
-- token: reconciled from the provider's records or resolved by the user), and a render goes
-- to at most one job (jobs_render_once); its error class is 'unknown', not a failure.
ALTER TABLE jobs DROP CONSTRAINT jobs_parked_has_render;
ALTER TABLE jobs DROP CONSTRAINT jobs_error_class_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_error_class_check
    CHECK (error_class IN ('retryable', 'permanent', 'account', 'unknown'));
ALTER TABLE jobs ADD CONSTRAINT jobs_parked_has_submission
    CHECK (state <> 'PARKED' OR client_token IS NOT NULL);
CREATE UNIQUE INDEX jobs_render_once ON jobs (provider, account, provider_job_id)
    WHERE provider_job_id IS NOT NULL;
