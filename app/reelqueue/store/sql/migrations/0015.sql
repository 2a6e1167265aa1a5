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

-- The rows already over a bound: rewriting a listed column fires job_cuts_update.
UPDATE jobs SET job_key = job_key
 WHERE length(job_key) > 1024
    OR length(name) > 200
    OR length(prompt) > 2000
    OR length(provider) > 200
    OR length(CAST(params AS BLOB)) > 16384 OR json_valid(params) = 0
    OR length(pinned_account) > 200
    OR length(output_path) > 1024
    OR length(error_message) > 4000
    OR length(CAST(metadata AS BLOB)) > 16384 OR json_valid(metadata) = 0
    OR length(route) > 64000;
