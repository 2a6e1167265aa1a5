-- Version 3: the machine that holds each finished file, and the wake-up triggers (issue 15).
-- jobs.output_host: the host name of the instance that wrote a completed job's file (each
-- instance writes under its own videos folder); status and the window say where a video
-- is. NULL for jobs completed before this version.
ALTER TABLE jobs ADD COLUMN output_host TEXT;

-- Version 2's workers installed these triggers themselves at start (CREATE OR REPLACE); a
-- database they ran on has them already, so they are dropped and made again here.
DROP TRIGGER IF EXISTS reelqueue_wake_jobs_added ON jobs;
DROP TRIGGER IF EXISTS reelqueue_wake_jobs_settled ON jobs;
DROP TRIGGER IF EXISTS reelqueue_wake_accounts ON accounts;
DROP TRIGGER IF EXISTS reelqueue_wake_batches ON batches;
DROP FUNCTION IF EXISTS reelqueue_notify_wake();
-- Wake-ups across machines (store/postgres_notify.py): a notification on the
-- 'reelqueue_wake' channel (payload: this schema) when jobs are added, when a job leaves the
-- in-flight states (a slot is free or it waits for a retry), and when an account or a batch
-- changes (a limit, a pause, a spend cap). NOTIFY is transactional: listeners hear of a
-- change once it is committed.
CREATE FUNCTION reelqueue_notify_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('reelqueue_wake', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
CREATE TRIGGER reelqueue_wake_jobs_added AFTER INSERT ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION reelqueue_notify_wake();
CREATE TRIGGER reelqueue_wake_jobs_settled AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                       AND NEW.state NOT IN ('CLAIMED', 'SUBMITTING', 'RENDERING',
                                             'DOWNLOADING'))
    EXECUTE FUNCTION reelqueue_notify_wake();
CREATE TRIGGER reelqueue_wake_accounts AFTER INSERT OR UPDATE OR DELETE
    ON accounts FOR EACH STATEMENT EXECUTE FUNCTION reelqueue_notify_wake();
CREATE TRIGGER reelqueue_wake_batches AFTER UPDATE ON batches
    FOR EACH STATEMENT EXECUTE FUNCTION reelqueue_notify_wake();
