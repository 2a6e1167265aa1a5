-- Version 10 (issue 24): routes across providers. A job whose row named several providers
-- carries its route (JSON, domain/routes.py: candidates ranked, each with its mapped
-- parameters and price, refusals marked); NULL for every job before this version. The
-- partial index serves the claim's look for routed jobs another provider may take, and
-- route_order (the usable candidates in rank order, '|veo|runway|') its filter.
ALTER TABLE jobs ADD COLUMN route TEXT;
ALTER TABLE jobs ADD COLUMN route_order TEXT;
CREATE INDEX jobs_routed ON jobs (priority DESC, id)
    WHERE route IS NOT NULL AND state IN ('QUEUED', 'RETRY_WAIT')
      AND provider_job_id IS NULL AND client_token IS NULL;
