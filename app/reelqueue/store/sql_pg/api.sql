-- The HTTP API's reads and tokens on the team database (store/pg_reader.py,
-- store/pg_tokens.py): the same reads as the SQLite journal's reader_* and token_* blocks
-- of sql/queries.sql, on one connection of their own (autocommit: each statement sees
-- what is committed when it runs).

-- name: job_by_key
SELECT * FROM jobs WHERE job_key = %(job_key)s;

-- name: present_job_keys
SELECT job_key FROM jobs WHERE job_key = ANY(%(keys)s);

-- name: jobs_after
-- Keyset pagination by id; %(any_state)s true reads every state, else those of %(states)s.
SELECT {listed_job_columns} FROM jobs
 WHERE id > %(after_id)s AND (%(any_state)s OR state = ANY(%(states)s))
 ORDER BY id LIMIT %(limit)s;

-- name: jobs_after_of_batch
SELECT {listed_job_columns} FROM jobs
 WHERE batch_id = %(batch_id)s AND id > %(after_id)s
   AND (%(any_state)s OR state = ANY(%(states)s))
 ORDER BY id LIMIT %(limit)s;

-- name: ledger_after
-- Every entry after %(seq)s, shown or not (an entry about neither a job nor an account is
-- not shown, but its seq is not a gap: pg_reader.py waits at a gap).
SELECT {listed_ledger_columns},
       (job_id IS NOT NULL OR account IS NOT NULL) AS shown FROM ledger
 WHERE seq > %(seq)s
 ORDER BY seq LIMIT %(limit)s;

-- name: ledger_snapshot
-- The transactions running now: every one with an id below xmax had started; below
-- xmin every one has ended.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
       pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax;

-- name: last_ledger_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM ledger;

-- name: writable
-- A standby (recovery) or a read-only session cannot write; nor can a user without INSERT
-- on jobs.
SELECT NOT pg_is_in_recovery()
       AND current_setting('transaction_read_only') = 'off'
       AND has_table_privilege('jobs', 'INSERT') AS ok;

-- name: token_insert
INSERT INTO api_tokens (name, token_id, salt, digest, scope, created_at)
VALUES (%(name)s, %(token_id)s, %(salt)s, %(digest)s, %(scope)s, %(now)s);

-- name: token_delete
DELETE FROM api_tokens WHERE name = %(name)s;

-- name: token_list
SELECT name, scope, created_at FROM api_tokens ORDER BY name;

-- name: token_by_id
SELECT name, salt, digest, scope, created_at FROM api_tokens WHERE token_id = %(token_id)s;
