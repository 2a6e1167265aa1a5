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
