-- Named queries of the PostgreSQL store. Only reelqueue/store/postgres.py knows these names.
-- Parameters are psycopg's named placeholders (%(now)s...). Every query runs under READ
-- COMMITTED; the claim takes its row locks itself.
--
-- One clock decides (DESIGN.md invariant 14): every time compared across machines (leases,
-- retry and cool-down times, heartbeats, the spend cap's day, the ledger's times) is read
-- from the server in the statement that writes or compares it: {server_now}, the
-- server_now expression below, put in by postgres.pg_queries. %(now)s, the caller's clock,
-- is kept only where nothing is compared across machines (created_at, updated_at,
-- started_at, finished_at: shown, never compared); a time a caller gives (a retry's
-- run_after, a cool-down's end) is written as the delay it meant from %(now)s, counted
-- on the server's clock. docs/team.md lists every column.

-- name: server_now
-- The server's clock as epoch seconds. clock_timestamp(), not now(): now() is the start of
-- the transaction, which may be long past when a statement has waited for a row lock. Read
-- once per statement (an uncorrelated subquery: one reading for every row it compares, and
-- a value an index scan can use, as jobs_retry_due for run_after). %(clock)s is NULL except
-- in tests (PostgresStore.open(server_clock=...)), where it stands in for the server's
-- clock so a test can set it.
SELECT COALESCE(%(clock)s::double precision,
                extract(epoch FROM clock_timestamp())::double precision)

-- name: server_time
-- A worker's measure of its clock's offset to the server (engine/clock_offset.py).
SELECT {server_now} AS now;

-- name: insert_batch
INSERT INTO batches (name, source_path, output_dir, max_attempts, settings, created_at)
VALUES (%(name)s, %(source_path)s, %(output_dir)s, %(max_attempts)s, %(settings)s, %(now)s)
RETURNING id;

-- name: get_batch
SELECT * FROM batches WHERE id = %(id)s;

-- name: newest_batch_id
-- The newest batch's id (NULL: none yet): the engine reads the accounts' views again
-- before a new batch's first claim (engine/account_views.py).
SELECT MAX(id) AS id FROM batches;

-- name: list_batches
-- A listing (store/listing.py): name and sheet path cut with the marker; a batch folder
-- over the path bound becomes '' (refused as a folder, never a cut name written to);
-- settings over their bound keep only what the engine and the views act on.
SELECT {listed_batch_columns} FROM batches ORDER BY id;

-- name: insert_jobs
-- One statement for a whole chunk of an import: the rows come as parallel arrays, keys
-- already present are skipped, and the new ids come back in the order given.
INSERT INTO jobs (batch_id, job_key, row_number, name, prompt, provider, params,
                  pinned_account, priority, output_path, max_attempts, created_at,
                  updated_at, metadata, route, route_order)
SELECT %(batch_id)s, k, r, n, p, pv, pa::jsonb, pin, pr, o, %(max_attempts)s, %(now)s,
       %(now)s, m::jsonb, rt, ro
  FROM unnest(%(keys)s::text[], %(rows)s::integer[], %(names)s::text[], %(prompts)s::text[],
              %(providers)s::text[], %(params)s::text[], %(pins)s::text[],
              %(priorities)s::integer[], %(outputs)s::text[], %(metas)s::text[],
              %(routes)s::text[], %(route_orders)s::text[])
       WITH ORDINALITY AS t(k, r, n, p, pv, pa, pin, pr, o, m, rt, ro, ord)
 ORDER BY ord
ON CONFLICT (job_key) DO NOTHING
RETURNING id, job_key;

-- name: existing_job_keys
SELECT job_key FROM jobs WHERE job_key = ANY(%(keys)s::text[]);

-- name: recent_render_times
-- The newest finished renders' times (claim to completion) with what they are compared by
-- (routing's "fastest": domain/render_times.py).
SELECT provider, params, finished_at - started_at AS seconds
  FROM jobs
 WHERE state = 'COMPLETED' AND started_at IS NOT NULL AND finished_at IS NOT NULL
 ORDER BY finished_at DESC
 LIMIT %(limit)s;

-- name: takeovers
-- See the SQLite store's.
SELECT account, detail ->> 'from' AS came_from, COUNT(*) AS n
  FROM ledger
 WHERE event = 'handed_over' AND account IS NOT NULL AND detail ->> 'at' = 'claim'
 GROUP BY account, came_from;

-- name: count_waiting
-- Each state through its own partial index (jobs_queued, jobs_retry_due): no index covers
-- both, so that the index entries of the in-flight states are not written (schema 9).
SELECT (SELECT COUNT(*) FROM jobs WHERE state = 'QUEUED')
     + (SELECT COUNT(*) FROM jobs WHERE state = 'RETRY_WAIT') AS count;

-- name: get_job
SELECT * FROM jobs WHERE id = %(id)s;

-- name: job_for_share
-- A write whose COMMIT went unanswered: the row once that transaction has ended (it held
-- the row's lock if it wrote the row).
SELECT * FROM jobs WHERE id = %(id)s FOR SHARE;

-- name: wrote_event
-- A fenced write whose COMMIT went unanswered: its ledger entry was in the same transaction.
SELECT EXISTS (SELECT 1 FROM ledger
                WHERE job_id = %(id)s AND claim_token = %(token)s AND event = %(event)s)
       AS written;

-- name: get_job_for_update
SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE;

-- name: account_of_job
SELECT account FROM jobs WHERE id = %(id)s;

-- name: counts_by_state
SELECT state, COUNT(*) FROM jobs GROUP BY state;

-- name: live_by_account
SELECT account, COUNT(*) FROM jobs
 WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 GROUP BY account;

-- name: live_count
SELECT COUNT(*) FROM jobs
 WHERE account = %(account)s
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: insert_account
-- The accounts table is locked for the position: two machines adding accounts at once
-- would otherwise both take MAX(position) + 1.
INSERT INTO accounts (name, provider, capacity, position, base_url, key_ref, settings,
                      created_at)
VALUES (%(name)s, %(provider)s, %(capacity)s,
        (SELECT COALESCE(MAX(position), 0) + 1 FROM accounts),
        %(base_url)s, %(key_ref)s, %(settings)s, %(now)s)
ON CONFLICT (name) DO NOTHING;

-- name: lock_accounts
LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE;

-- name: get_account
SELECT * FROM accounts WHERE name = %(name)s;

-- name: claim_account
-- The claim's first step (sql_journal's _account_with_room): the account's row, locked;
-- its room is counted next, in a statement of its own (claim_room: a snapshot taken once
-- the lock is held).
SELECT * FROM accounts WHERE name = %(name)s FOR UPDATE;

-- name: lock_account
-- The claim's first step: every claim on one account queues here, so the free slots it
-- counts next cannot be taken by another machine before this transaction commits.
SELECT * FROM accounts WHERE name = %(name)s FOR UPDATE;

-- name: list_accounts
SELECT * FROM accounts ORDER BY position, name;

-- name: delete_account
DELETE FROM accounts WHERE name = %(name)s;

-- name: put_account_view
-- An account's view (issue 32 item 2), one row per account: an older reading never
-- replaces a newer one (two machines, or a refresh and the engine, read close together).
INSERT INTO account_views (account, organization_id, balance_amount, balance_unit, limits,
                           read_at, read_by, problem)
VALUES (%(account)s, %(organization_id)s, %(balance_amount)s, %(balance_unit)s,
        %(limits)s, %(read_at)s, %(read_by)s, %(problem)s)
ON CONFLICT (account) DO UPDATE
   SET organization_id = excluded.organization_id,
       balance_amount = excluded.balance_amount,
       balance_unit = excluded.balance_unit,
       limits = excluded.limits,
       read_at = excluded.read_at,
       read_by = excluded.read_by,
       problem = excluded.problem
 WHERE excluded.read_at >= account_views.read_at;

-- name: list_account_views
SELECT * FROM account_views ORDER BY account;

-- name: delete_account_view
DELETE FROM account_views WHERE account = %(account)s;

-- name: update_account
-- settings: a JSON merge patch one level deep (a null removes the key).
UPDATE accounts
   SET capacity = COALESCE(%(capacity)s, capacity),
       enabled = COALESCE(%(enabled)s, enabled),
       base_url = COALESCE(%(base_url)s, base_url),
       settings = CASE WHEN %(settings)s::jsonb IS NULL THEN settings
                       ELSE (settings || %(settings)s::jsonb) - ARRAY(
                            SELECT key FROM jsonb_each(%(settings)s::jsonb)
                             WHERE jsonb_typeof(value) = 'null') END
 WHERE name = %(name)s;

-- name: set_account_status
-- A cool-down ends after the delay the caller meant (cooldown_until - now), on the
-- server's clock: the claims of every machine compare it with that clock.
UPDATE accounts
   SET status = %(status)s, status_detail = %(detail)s,
       cooldown_until = {server_now} + (%(cooldown_until)s::double precision - %(now)s)
 WHERE name = %(name)s;

-- name: claim_room
-- Under the account's row lock (lock_account): its live renders, and whether it is still
-- cooling down by the server's clock.
SELECT (SELECT COUNT(*) FROM jobs
         WHERE account = %(account)s
           AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')) AS live,
       COALESCE(cooldown_until > {server_now}, FALSE) AS cooling
  FROM accounts WHERE name = %(account)s;

-- name: claim_view
-- The account's view (issue 32 item 3), read under the account's row lock in the claim's
-- transaction, with the server's clock (store/provider_limits.py decides what it gates).
SELECT v.*, {server_now} AS now FROM account_views v WHERE v.account = %(account)s;

-- name: live_of_model
-- The account's renders of one model in flight (a job without a model is the default's):
-- the few live rows of the account (jobs_live), each one's model read.
SELECT COUNT(*) FROM jobs
 WHERE account = %(account)s AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND COALESCE(NULLIF(params ->> 'model', ''), %(default_model)s::text, '') = %(model)s;

-- name: creates_since
-- What counts against a model's daily limit beyond the provider's used_today at the read:
-- the creates of that model on the account written since the read (their submitting
-- entries, ledger_creates: schema 11), and its claimed jobs of that model that will create.
SELECT (SELECT COUNT(*) FROM ledger l JOIN jobs j ON j.id = l.job_id
         WHERE l.event = 'submitting' AND l.account = %(account)s
           AND l.at >= %(since)s::double precision
           AND COALESCE(NULLIF(j.params ->> 'model', ''), %(default_model)s::text, '')
               = %(model)s)
     + (SELECT COUNT(*) FROM jobs
         WHERE account = %(account)s AND state = 'CLAIMED' AND client_token IS NULL
           AND COALESCE(NULLIF(params ->> 'model', ''), %(default_model)s::text, '')
               = %(model)s) AS n;

-- name: pending_usd
-- What the account's published balance cannot include yet (issue 32 item 4,
-- store/balance.py), in USD (the jobs' stamped price), with how many have no price: each
-- create written since the read (ledger_creates), each claimed job that will create, and
-- (every_live) every other render in flight. Under the account's row lock.
SELECT COALESCE(SUM(price), 0) AS usd, COUNT(*) - COUNT(price) AS unpriced FROM (
    SELECT CASE WHEN jsonb_typeof(j.metadata -> 'price') = 'number'
                THEN (j.metadata ->> 'price')::double precision END AS price
      FROM ledger l JOIN jobs j ON j.id = l.job_id
     WHERE l.event = 'submitting' AND l.account = %(account)s
       AND l.at >= %(since)s::double precision
    UNION ALL
    SELECT CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                THEN (metadata ->> 'price')::double precision END
      FROM jobs
     WHERE account = %(account)s
       AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
       AND ((state = 'CLAIMED' AND client_token IS NULL)
            OR (%(every_live)s::boolean AND NOT EXISTS (
                SELECT 1 FROM ledger l2 WHERE l2.job_id = jobs.id
                   AND l2.event = 'submitting'
                   AND l2.at >= %(since)s::double precision)))) AS p;

-- name: next_claimable
-- The same three index seeks as the SQLite store's next_claimable (queued jobs any account
-- may take, queued jobs bound to this account, retry waits that are due), each taking its
-- row with FOR UPDATE SKIP LOCKED: a job another machine is claiming right now is stepped
-- over, not waited for. The best of the (at most three) answers is claimed; the others stay
-- locked only until this transaction ends. %(skip_batches)s and %(creates)s: spend caps.
-- {gate}: nothing here; claim_fast puts claim_gate there (no row is looked at, nor
-- locked, when the account has no room). {provider}: %(provider)s here; claim_fast's
-- claim_provider there (the locked account's). %(skip_models)s, %(default_model)s: limits
-- from the provider (issue 32 item 3), as in the SQLite store's next_claimable.
WITH anyone AS (
    SELECT id, priority FROM jobs
      WHERE state = 'QUEUED' AND provider = {provider}
        AND COALESCE(account, pinned_account) IS NULL
        AND run_after <= {server_now}
        AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
             SELECT b.id FROM batches b WHERE b.settings @> '{"paused": true}'))
        AND (provider_job_id IS NOT NULL OR (%(creates)s AND NOT batch_id = ANY(
             %(skip_batches)s::bigint[])))
        AND (provider_job_id IS NOT NULL OR (COALESCE(NULLIF(params ->> 'model', ''),
             %(default_model)s::text, '') = ANY(%(skip_models)s::text[])) IS NOT TRUE)
        {gate}
      ORDER BY provider, COALESCE(account, pinned_account), priority DESC, id
      LIMIT 1 FOR UPDATE SKIP LOCKED),
bound AS (
    SELECT id, priority FROM jobs
      WHERE state = 'QUEUED' AND provider = {provider}
        AND COALESCE(account, pinned_account) = %(account)s
        AND run_after <= {server_now}
        AND (pinned_account IS NULL OR pinned_account = %(account)s)
        AND (account IS NULL OR account = %(account)s)
        AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
             SELECT b.id FROM batches b WHERE b.settings @> '{"paused": true}'))
        AND (provider_job_id IS NOT NULL OR (%(creates)s AND NOT batch_id = ANY(
             %(skip_batches)s::bigint[])))
        AND (provider_job_id IS NOT NULL OR (COALESCE(NULLIF(params ->> 'model', ''),
             %(default_model)s::text, '') = ANY(%(skip_models)s::text[])) IS NOT TRUE)
        {gate}
      ORDER BY provider, COALESCE(account, pinned_account), priority DESC, id
      LIMIT 1 FOR UPDATE SKIP LOCKED),
due AS (
    SELECT id, priority FROM jobs
      WHERE state = 'RETRY_WAIT' AND provider = {provider}
        AND run_after <= {server_now}
        AND (pinned_account IS NULL OR pinned_account = %(account)s)
        AND (account IS NULL OR account = %(account)s)
        AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
             SELECT b.id FROM batches b WHERE b.settings @> '{"paused": true}'))
        AND (provider_job_id IS NOT NULL OR (%(creates)s AND NOT batch_id = ANY(
             %(skip_batches)s::bigint[])))
        AND (provider_job_id IS NOT NULL OR (COALESCE(NULLIF(params ->> 'model', ''),
             %(default_model)s::text, '') = ANY(%(skip_models)s::text[])) IS NOT TRUE)
        {gate}
      ORDER BY priority DESC, id
      LIMIT 1 FOR UPDATE SKIP LOCKED)
-- The answer carries what the spend caps ask about it (spend_candidate's columns), so a
-- claim makes one round trip for both.
SELECT c.id, c.priority, j.batch_id, j.provider_job_id, j.client_token,
       j.metadata -> 'price' AS price, b.settings -> 'max_spend' AS max_spend
  FROM (SELECT * FROM anyone UNION ALL SELECT * FROM bound
        UNION ALL SELECT * FROM due) AS c
  JOIN jobs j ON j.id = c.id JOIN batches b ON b.id = j.batch_id
 ORDER BY c.priority DESC, c.id
 LIMIT 1;

-- name: claim_job
UPDATE jobs
   SET state = 'CLAIMED', account = %(account)s, claim_token = %(token)s,
       lease_owner = %(owner)s, lease_until = {server_now} + %(lease_seconds)s,
       attempts = attempts + 1,
       started_at = COALESCE(started_at, %(now)s), updated_at = %(now)s,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = %(id)s AND state IN ('QUEUED', 'RETRY_WAIT')
RETURNING *;

-- name: renew_leases
-- One statement: the instance's leases and its heartbeat in the instances registry, both
-- on the server's clock. tokens NULL: every lease of the instance; else only the claims
-- the engine runs.
WITH renewed AS (
    UPDATE jobs SET lease_until = {server_now} + %(lease_seconds)s
     WHERE lease_owner = %(owner)s
       AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
       AND (%(tokens)s::text[] IS NULL OR claim_token = ANY(%(tokens)s::text[]))
    RETURNING id
), beat AS (
    UPDATE instances SET heartbeat_at = {server_now},
           live_renders = (SELECT COUNT(*) FROM renewed),
           lease_seconds = %(lease_seconds)s,
           clock_offset = COALESCE(%(clock_offset)s::double precision, clock_offset)
     WHERE id = %(owner)s
)
SELECT id FROM renewed;

-- name: fenced_mark_submitting
-- %(min_lease)s (seconds, or NULL: not checked): a create is sent only while the claim's
-- lease still holds at least that long on the server's clock, so it is answered or given up
-- before another machine may take the job over (the create's timeout plus a margin).
UPDATE jobs SET state = 'SUBMITTING', client_token = %(client_token)s, updated_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'CLAIMED'
   AND provider_job_id IS NULL
   AND (%(min_lease)s::double precision IS NULL
        OR lease_until - {server_now} >= %(min_lease)s::double precision);

-- name: submit_refusal
-- Why fenced_mark_submitting changed nothing: the claim still held but its lease was short.
SELECT lease_until - {server_now} AS lease_left FROM jobs
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'CLAIMED'
   AND provider_job_id IS NULL;

-- name: fenced_record_submitted
UPDATE jobs SET state = 'RENDERING', provider_job_id = %(provider_job_id)s,
       sub_status = 'submitted', updated_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'SUBMITTING';

-- name: fenced_mark_rendering
UPDATE jobs SET state = 'RENDERING', updated_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING')
   AND provider_job_id IS NOT NULL;

-- name: fenced_record_progress
UPDATE jobs SET sub_status = %(sub_status)s, progress = %(progress)s, updated_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'RENDERING';

-- name: fenced_mark_downloading
-- The output path the download chose (a suffixed name when a file the journal did not
-- record holds the planned one; NULL: kept) and its temporary file; no hash recorded yet.
UPDATE jobs SET state = 'DOWNLOADING', updated_at = %(now)s,
       output_path = COALESCE(%(output_path)s, output_path), output_part = %(part)s,
       output_size = NULL, output_sha256 = NULL
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'RENDERING';

-- name: fenced_record_download
-- The downloaded file's size and sha256, written before it is renamed into place: the
-- only file recovery completes this job from (issue 22).
UPDATE jobs SET output_size = %(size)s, output_sha256 = %(sha256)s, updated_at = %(now)s
 WHERE id = %(id)s AND state = 'DOWNLOADING' AND claim_token = %(token)s;

-- name: fenced_mark_completed
UPDATE jobs SET state = 'COMPLETED', output_size = %(size)s, output_sha256 = %(sha256)s,
       output_host = %(host)s, cost = COALESCE(%(cost)s, cost), progress = 1.0, finished_at = %(now)s,
       updated_at = %(now)s, claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'DOWNLOADING';

-- name: fenced_set_retry_wait
UPDATE jobs SET state = 'RETRY_WAIT', updated_at = %(now)s,
       run_after = {server_now} + (%(run_after)s - %(now)s),
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = CASE WHEN %(keep)s THEN account ELSE NULL END,
       provider_job_id = CASE WHEN %(keep)s THEN provider_job_id ELSE NULL END,
       client_token = CASE WHEN %(keep)s THEN client_token ELSE NULL END,
       sub_status = NULL, progress = NULL, error_class = %(error_class)s,
       error_label = %(error_label)s, error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token = %(token)s
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: fenced_release_to_queue
-- Account-level trouble: back without spending the attempt (see the SQLite store's).
UPDATE jobs SET state = CASE WHEN %(run_after)s > 0 THEN 'RETRY_WAIT' ELSE 'QUEUED' END,
       run_after = CASE WHEN %(run_after)s > 0
                        THEN {server_now} + (%(run_after)s - %(now)s) ELSE 0 END,
       attempts = GREATEST(attempts - 1, 0),
       updated_at = %(now)s, claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = CASE WHEN provider_job_id IS NULL AND NOT %(keep_submission)s THEN NULL
                      ELSE account END,
       client_token = CASE WHEN provider_job_id IS NULL AND NOT %(keep_submission)s
                           THEN NULL ELSE client_token END,
       sub_status = NULL, progress = NULL, error_class = %(error_class)s,
       error_label = %(error_label)s, error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token = %(token)s
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: any_routed_waiting
-- Whether any routed job could still move to another provider (issue 24; jobs_routed).
SELECT EXISTS (SELECT 1 FROM jobs
                WHERE route IS NOT NULL AND state IN ('QUEUED', 'RETRY_WAIT')
                  AND provider_job_id IS NULL AND client_token IS NULL) AS found;

-- name: routed_waiting
-- See the SQLite store's. Each row taken FOR UPDATE SKIP LOCKED: a job another machine is
-- claiming or moving right now is stepped over.
SELECT j.id, j.batch_id, j.provider,
       CASE WHEN octet_length(j.route) > %(max_route_bytes)s THEN NULL
            ELSE j.route END AS route,
       octet_length(j.route) > %(max_route_bytes)s AS oversized,
       j.params -> 'seed' AS seed, b.settings -> 'max_spend' AS max_spend
  FROM jobs j JOIN batches b ON b.id = j.batch_id
 WHERE j.route IS NOT NULL AND j.state IN ('QUEUED', 'RETRY_WAIT')
   AND j.provider_job_id IS NULL AND j.client_token IS NULL
   AND j.account IS NULL AND j.pinned_account IS NULL
   AND j.run_after <= {server_now} AND j.provider <> %(provider)s
   AND strpos(j.route_order, %(needle)s) > 0
   AND (left(j.route_order, 1) = '~' OR NOT EXISTS (
        SELECT 1 FROM unnest(%(free)s::text[]) f(v)
         WHERE strpos(j.route_order, '|' || f.v || '|')
               BETWEEN 1 AND strpos(j.route_order, %(needle)s) - 1))
   AND j.batch_id NOT IN (SELECT b2.id FROM batches b2
                           WHERE b2.settings @> '{"paused": true}')
 ORDER BY j.priority DESC, j.id
 LIMIT %(limit)s
   FOR UPDATE OF j SKIP LOCKED;

-- name: accounts_room
-- Every account with its renders in flight and whether it cools down by the server's clock.
SELECT a.*, (SELECT COUNT(*) FROM jobs
              WHERE account = a.name
                AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')) AS live,
       COALESCE(a.cooldown_until > {server_now}, FALSE) AS cooling
  FROM accounts a ORDER BY a.position, a.name;

-- name: route_take
-- See the SQLite store's.
UPDATE jobs SET provider = %(provider)s, params = %(params)s, updated_at = %(now)s,
       metadata = CASE WHEN %(price)s::float8 IS NULL THEN metadata - 'price'
                       ELSE jsonb_set(metadata, '{price}', to_jsonb(%(price)s::float8)) END
 WHERE id = %(id)s AND state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL AND account IS NULL
 RETURNING id;

-- name: fenced_hand_over
-- See the SQLite store's.
UPDATE jobs SET state = 'QUEUED', run_after = 0, attempts = GREATEST(attempts - 1, 0),
       updated_at = %(now)s, claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = NULL, client_token = NULL, provider_job_id = NULL,
       sub_status = NULL, progress = NULL, provider = %(provider)s, params = %(params)s,
       route = %(route)s, route_order = %(route_order)s,
       metadata = CASE WHEN %(price)s::float8 IS NULL THEN metadata - 'price'
                       ELSE jsonb_set(metadata, '{price}', to_jsonb(%(price)s::float8)) END,
       error_class = %(error_class)s, error_label = %(error_label)s,
       error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token = %(token)s
   AND state IN ('CLAIMED', 'RENDERING', 'SUBMITTING');

-- name: fenced_mark_failed
UPDATE jobs SET state = 'FAILED', finished_at = %(now)s, updated_at = %(now)s,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       provider_job_id = CASE WHEN %(drop_render)s THEN NULL ELSE provider_job_id END,
       error_class = %(error_class)s, error_label = %(error_label)s,
       error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token = %(token)s
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: fenced_park
-- A render whose resume keeps killing the process, or a create whose outcome stayed unknown
-- (its client token): kept for the user, holding no claim (issue 19).
UPDATE jobs SET state = 'PARKED', updated_at = %(now)s, sub_status = NULL,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = %(error_class)s, error_label = %(error_label)s,
       error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token = %(token)s AND client_token IS NOT NULL
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: intent_before
-- What forget_submission reads before its update: the client token held and the price
-- (metadata), for the spend entry that gives the intent's price back.
SELECT client_token, metadata FROM jobs WHERE id = %(id)s;

-- name: fenced_forget_submission
-- Reconciliation proved the earlier create absent: back to CLAIMED without its client
-- token, so this claim creates once.
UPDATE jobs SET state = 'CLAIMED', client_token = NULL, updated_at = %(now)s
 WHERE id = %(id)s AND claim_token = %(token)s AND state = 'SUBMITTING'
   AND provider_job_id IS NULL;

-- name: attach_render
-- The user picked the render of a create whose outcome stayed unknown (one job per render:
-- the unique index jobs_render_once).
UPDATE jobs SET state = 'QUEUED', provider_job_id = %(provider_job_id)s, attempts = 0,
       run_after = 0, finished_at = NULL, updated_at = %(now)s, sub_status = NULL,
       progress = NULL
 WHERE id = %(id)s AND state IN ('PARKED', 'FAILED') AND provider_job_id IS NULL
   AND client_token IS NOT NULL AND account IS NOT NULL;

-- name: unresolved_submissions
SELECT jobs.*,
       (SELECT MIN(l.at) FROM ledger AS l
         WHERE l.job_id = jobs.id AND l.event = 'submitting'
           AND l.detail->>'client_token' = jobs.client_token) AS intent_at
  FROM jobs
 WHERE account = %(account)s AND client_token IS NOT NULL AND provider_job_id IS NULL
   AND state NOT IN ('COMPLETED', 'CANCELLED');

-- name: render_holder
-- Another job of this job's provider and account that holds the render (a render goes to
-- one job: jobs_render_once). The account is matched as IS NOT DISTINCT FROM would, in two
-- branches (equal, or both NULL) so that each seeks jobs_render_once on its whole key; IS
-- NOT DISTINCT FROM itself is not an index condition, and the seek on the provider alone
-- walked every render of the provider (issue 20).
SELECT other.id AS holder FROM jobs AS this JOIN jobs AS other
    ON other.provider = this.provider AND other.account = this.account
   AND other.provider_job_id = %(provider_job_id)s
 WHERE this.id = %(id)s AND other.id <> %(id)s
UNION ALL
SELECT other.id AS holder FROM jobs AS this JOIN jobs AS other
    ON other.provider = this.provider AND other.account IS NULL
   AND other.provider_job_id = %(provider_job_id)s
 WHERE this.id = %(id)s AND this.account IS NULL AND other.id <> %(id)s;

-- name: crash_requeues
SELECT COUNT(*) AS n FROM ledger
 WHERE job_id = %(id)s AND event = 'requeued' AND detail->>'by' = 'recovery'
   AND seq > COALESCE((SELECT MAX(seq) FROM ledger
                        WHERE job_id = %(id)s
                          AND (event IN ('retry_wait', 'released')
                               OR (event = 'requeued' AND detail->>'by' = 'user'))), 0);

-- name: known_provider_job_ids
SELECT provider_job_id FROM jobs
 WHERE provider = %(provider)s AND account = %(account)s
   AND provider_job_id = ANY(%(ids)s);

-- name: front_priority
SELECT COALESCE(MAX(priority), 0) + 1 FROM jobs WHERE state IN ('QUEUED', 'RETRY_WAIT');

-- name: set_job_priority
UPDATE jobs SET priority = %(priority)s, updated_at = %(now)s
 WHERE id = %(id)s AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: set_batch_priority
UPDATE jobs SET priority = %(priority)s, updated_at = %(now)s
 WHERE batch_id = %(batch_id)s AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: set_batch_paused
UPDATE batches
   SET settings = CASE WHEN %(paused)s THEN settings || '{"paused": true}'::jsonb
                       ELSE settings - 'paused' END
 WHERE id = %(id)s;

-- name: cancel_job
UPDATE jobs SET state = 'CANCELLED', finished_at = %(now)s, updated_at = %(now)s,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL
 WHERE id = %(id)s AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: requeue_job
UPDATE jobs SET state = 'QUEUED', finished_at = NULL, updated_at = %(now)s, attempts = 0,
       run_after = 0,
       account = CASE WHEN %(keep)s AND (provider_job_id IS NOT NULL
                                         OR (%(reconcile)s AND client_token IS NOT NULL
                                             AND error_label = 'submit outcome unknown'))
                      THEN account END,
       client_token = CASE WHEN %(keep)s AND (provider_job_id IS NOT NULL
                                              OR (%(reconcile)s
                                                  AND error_label = 'submit outcome unknown'))
                           THEN client_token END,
       provider_job_id = CASE WHEN %(keep)s THEN provider_job_id END,
       sub_status = NULL, progress = NULL,
       params = CASE WHEN %(seed)s::bigint IS NULL THEN params
                     ELSE jsonb_set(params, '{seed}', to_jsonb(%(seed)s::bigint)) END
 WHERE id = %(id)s AND state IN ('FAILED', 'CANCELLED', 'PARKED');

-- name: insert_ledger
INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
VALUES ({server_now}, %(event)s, %(job_id)s, %(account)s, %(claim_token)s, %(detail)s);

-- name: in_flight_all
SELECT * FROM jobs WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 ORDER BY id;

-- name: in_flight_expired
SELECT * FROM jobs WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND lease_until < {server_now}
 ORDER BY id;

-- Recovery's updates name what the plan read (recovery_plan.py): the claim token and the
-- state. A row that moved on since (its owner wrote SUBMITTING, a user cancelled it) is
-- left alone: the plan for a CLAIMED job (requeue) is wrong for a SUBMITTING one (its
-- create may be on its way). On a shared store (only expired leases taken over:
-- %(any_lease)s false), the expiry too: a lease renewed meanwhile stays put.
-- name: recover_complete
UPDATE jobs SET state = 'COMPLETED', output_size = %(size)s, output_sha256 = %(sha256)s,
       output_host = %(host)s,
       progress = 1.0, finished_at = %(now)s, updated_at = %(now)s,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = %(id)s AND claim_token IS NOT DISTINCT FROM %(old_token)s
   AND state = %(planned_state)s
   AND (%(any_lease)s OR lease_until < {server_now});

-- name: recover_reattach
UPDATE jobs SET state = %(state)s, claim_token = %(token)s, lease_owner = %(owner)s,
       lease_until = {server_now} + %(lease_seconds)s, updated_at = %(now)s
 WHERE id = %(id)s AND claim_token IS NOT DISTINCT FROM %(old_token)s
   AND state = %(planned_state)s
   AND (%(any_lease)s OR lease_until < {server_now});

-- name: recover_requeue
-- The claim ended in a crash: its attempt is given back (recovery_plan.py fails a job whose
-- claims keep ending in crashes).
UPDATE jobs SET state = 'QUEUED', run_after = 0, updated_at = %(now)s,
       attempts = GREATEST(attempts - 1, 0),
       claim_token = NULL, lease_owner = NULL, lease_until = NULL, account = NULL,
       client_token = NULL, provider_job_id = NULL, sub_status = NULL, progress = NULL
 WHERE id = %(id)s AND claim_token IS NOT DISTINCT FROM %(old_token)s
   AND state = %(planned_state)s
   AND (%(any_lease)s OR lease_until < {server_now});

-- name: recover_park
-- Died inside the submit window on a provider that cannot be asked: unknown, kept for the
-- user (not failed, not created again by itself).
UPDATE jobs SET state = 'PARKED', updated_at = %(now)s, sub_status = NULL,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = %(error_class)s, error_label = %(error_label)s,
       error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token IS NOT DISTINCT FROM %(old_token)s
   AND client_token IS NOT NULL AND state = %(planned_state)s
   AND (%(any_lease)s OR lease_until < {server_now});

-- name: recover_fail
UPDATE jobs SET state = 'FAILED', finished_at = %(now)s, updated_at = %(now)s,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = %(error_class)s, error_label = %(error_label)s,
       error_message = %(error_message)s
 WHERE id = %(id)s AND claim_token IS NOT DISTINCT FROM %(old_token)s
   AND state = %(planned_state)s
   AND (%(any_lease)s OR lease_until < {server_now});

-- The jobs table's sort: {key} is one of the job_order_* expressions below, chosen by name
-- from that list; NULLs first ascending (as SQLite), ties by id, DESC is ASC reversed.
-- name: job_ids_ordered
SELECT id FROM jobs ORDER BY {key} {direction} {nulls}, id {direction}
 LIMIT %(limit)s OFFSET %(offset)s;

-- name: job_order_row
row_number

-- ASCII-only case folding compared byte by byte: SQLite's NOCASE.
-- name: job_order_name
translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') COLLATE "C"

-- name: job_order_prompt
translate(prompt, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') COLLATE "C"

-- name: job_order_account
translate(COALESCE(account, provider || ' · any'), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
          'abcdefghijklmnopqrstuvwxyz') COLLATE "C"

-- name: job_order_state
CASE state WHEN 'QUEUED' THEN 0 WHEN 'RETRY_WAIT' THEN 1 WHEN 'CLAIMED' THEN 2
           WHEN 'SUBMITTING' THEN 3 WHEN 'RENDERING' THEN 4 WHEN 'DOWNLOADING' THEN 5
           WHEN 'COMPLETED' THEN 6 WHEN 'PARKED' THEN 7 WHEN 'FAILED' THEN 8 ELSE 9 END

-- name: job_order_progress
progress

-- name: job_order_attempts
attempts

-- name: job_order_output
translate(output_path, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') COLLATE "C"

-- name: job_order_error
translate(error_label, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') COLLATE "C"

-- name: completed_jobs
SELECT * FROM jobs WHERE state = 'COMPLETED' ORDER BY id;

-- name: completed_outputs
SELECT id, output_path, output_size FROM jobs WHERE state = 'COMPLETED' ORDER BY id;

-- name: prune_ledger
-- The ledger's times are the server's: the age the caller meant, on that clock.
DELETE FROM ledger WHERE at < {server_now} - (%(now)s - %(before)s) AND event <> 'spend';

-- The pump's timer: %(now)s is on the server's clock here (the engine converts with its
-- measured offset), and so is the answer.
-- name: next_retry_at
SELECT MIN(run_after) FROM jobs WHERE state = 'RETRY_WAIT' AND run_after > %(now)s;

-- name: next_cooldown_at
SELECT MIN(cooldown_until) FROM accounts WHERE cooldown_until > %(now)s;

-- name: ledger_for_job
SELECT * FROM ledger WHERE job_id = %(job_id)s ORDER BY seq;

-- name: ledger_all
SELECT * FROM ledger ORDER BY seq;

-- name: ledger_after
SELECT {listed_ledger_columns} FROM ledger WHERE seq > %(seq)s
 ORDER BY seq LIMIT %(limit)s;

-- name: ledger_tail
-- The last %(limit)s entries (of one job, or of all when %(job_id)s is null), oldest first:
-- a team's ledger is not read whole over the network for a short tail, nor a long value
-- of it (a listing: cut).
SELECT * FROM (SELECT {listed_ledger_columns} FROM ledger
                WHERE %(job_id)s::bigint IS NULL OR job_id = %(job_id)s::bigint
                ORDER BY seq DESC LIMIT %(limit)s) AS tail
 ORDER BY seq;

-- name: doctor_completed_twice
SELECT job_id, COUNT(*) AS n FROM ledger WHERE event = 'completed'
 GROUP BY job_id HAVING COUNT(*) > 1;

-- A team's live claims are fine while their lease holds on the server's clock and their
-- owner's heartbeat is recent; these two list the others.
-- name: doctor_expired_leases
-- Leases run out and still held: another instance takes each over at its next heartbeat;
-- one that stays here means no instance is running to take it.
SELECT id, state, lease_owner, round(({server_now} - lease_until)::numeric, 1)::double precision AS expired_for
  FROM jobs
 WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND lease_until < {server_now}
 ORDER BY id;

-- name: doctor_silent_owners
-- Claims of an instance that has not said goodbye and whose heartbeat is older than its
-- lease (60 s, the default, for an instance of a version before schema 4): a lease it still
-- holds was not renewed by a heartbeat (a claim made while its heartbeat stood still).
SELECT j.id, j.state, j.lease_owner, i.host,
       round(({server_now} - i.heartbeat_at)::numeric, 1)::double precision AS silent_for
  FROM jobs j JOIN instances i ON i.id = j.lease_owner
 WHERE j.state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND i.stopped_at IS NULL
   AND {server_now} - i.heartbeat_at > COALESCE(i.lease_seconds, 60)
 ORDER BY j.id;

-- name: doctor_over_capacity
SELECT a.name, a.capacity, COUNT(j.id) AS live FROM accounts a
  JOIN jobs j ON j.account = a.name
   AND j.state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 GROUP BY a.name, a.capacity HAVING COUNT(j.id) > a.capacity;

-- name: update_batch_settings
UPDATE batches
   SET settings = (settings || %(patch)s::jsonb) - ARRAY(
       SELECT key FROM jsonb_each(%(patch)s::jsonb) WHERE jsonb_typeof(value) = 'null')
 WHERE id = %(id)s;

-- name: lock_batch
-- A capped batch's spend is counted under its row lock: two machines claiming for one
-- batch cannot both pass its cap.
SELECT id FROM batches WHERE id = %(id)s FOR UPDATE;

-- name: spend_of_batch
SELECT COALESCE(SUM((l.detail ->> 'usd')::double precision), 0.0)
  FROM jobs j JOIN ledger l ON l.event = 'spend' AND l.job_id = j.id
 WHERE j.batch_id = %(batch)s;

-- name: reserved_of_batch
SELECT COALESCE(SUM((CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                           THEN (metadata ->> 'price')::double precision END)), 0.0) FROM jobs
 WHERE batch_id = %(batch)s AND state = 'CLAIMED'
   AND provider_job_id IS NULL AND client_token IS NULL;

-- name: spend_of_account
-- The day is the caller's (its local midnight, %(day_start)s) moved to wherever the
-- server's clock is: a whole number of days later or earlier when the two clocks sit on
-- either side of a midnight. The ledger's times are the server's.
SELECT COALESCE(SUM((detail ->> 'usd')::double precision), 0.0) FROM ledger
 WHERE at >= %(day_start)s + 86400 * floor(({server_now} - %(day_start)s) / 86400)
   AND event = 'spend' AND account = %(account)s;

-- name: removed_accounts_spend
-- The spend that day (as spend_of_account counts the day) of accounts removed since
-- (issue 34: their renders were paid; a removed account holds no claimed job, so nothing
-- is reserved), by name in code-point order (as SQLite's and the memory store's).
SELECT account, COALESCE(SUM((detail ->> 'usd')::double precision), 0.0) AS usd
  FROM ledger
 WHERE at >= %(day_start)s + 86400 * floor(({server_now} - %(day_start)s) / 86400)
   AND event = 'spend' AND account IS NOT NULL
   AND account NOT IN (SELECT name FROM accounts)
 GROUP BY account ORDER BY account COLLATE "C";

-- name: reserved_of_account
SELECT COALESCE(SUM((CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                           THEN (metadata ->> 'price')::double precision END)), 0.0) FROM jobs
 WHERE account = %(account)s AND state = 'CLAIMED'
   AND provider_job_id IS NULL AND client_token IS NULL;

-- name: capped_batches
SELECT id, settings -> 'max_spend' AS max_spend FROM batches
 WHERE settings ? 'max_spend' AND jsonb_typeof(settings -> 'max_spend') <> 'null'
 ORDER BY id;

-- name: waiting_creates_of_batch
SELECT COUNT(*) FROM jobs
 WHERE batch_id = %(batch)s AND state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL
   AND COALESCE((CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                           THEN (metadata ->> 'price')::double precision END) > %(room)s, TRUE);

-- name: waiting_creates_of_account
-- Each waiting state through its own partial index (as count_waiting).
SELECT COUNT(*) FROM (
    SELECT metadata, pinned_account, account FROM jobs
     WHERE state = 'QUEUED' AND provider = %(provider)s
       AND provider_job_id IS NULL AND client_token IS NULL
    UNION ALL
    SELECT metadata, pinned_account, account FROM jobs
     WHERE state = 'RETRY_WAIT' AND provider = %(provider)s
       AND provider_job_id IS NULL AND client_token IS NULL) AS w
 WHERE COALESCE((CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                           THEN (metadata ->> 'price')::double precision END) > %(room)s, TRUE)
   AND (pinned_account IS NULL OR pinned_account = %(account)s)
   AND (account IS NULL OR account = %(account)s);

-- name: to_go_by_provider
-- What the waiting jobs will cost (store/spend.py ToGo): queued or in retry wait with no
-- create sent yet, per provider and the one account that may take them (pinned, or
-- bound: the claim hands a job bound to an account only to it); a price that is not a number counts
-- as no price, as price_of says.
SELECT provider, COALESCE(pinned_account, account) AS account,
       COALESCE(SUM(CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                         THEN (metadata ->> 'price')::double precision END), 0.0) AS usd,
       COUNT(*) FILTER (WHERE jsonb_typeof(metadata -> 'price') = 'number') AS priced,
       COUNT(*) FILTER (WHERE jsonb_typeof(metadata -> 'price') IS DISTINCT FROM 'number')
           AS unpriced
  FROM jobs
 WHERE state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL
 GROUP BY provider, COALESCE(pinned_account, account);

-- name: register_instance
INSERT INTO instances (id, host, pid, version, started_at, heartbeat_at, clock_offset,
                       lease_seconds, providers)
VALUES (%(id)s, %(host)s, %(pid)s, %(version)s, {server_now}, {server_now},
        %(clock_offset)s, %(lease_seconds)s, %(providers)s)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = NULL,
    clock_offset = COALESCE(EXCLUDED.clock_offset, instances.clock_offset),
    lease_seconds = COALESCE(EXCLUDED.lease_seconds, instances.lease_seconds),
    providers = COALESCE(EXCLUDED.providers, instances.providers);

-- name: stop_instance
UPDATE instances SET stopped_at = {server_now}, live_renders = 0 WHERE id = %(id)s;

-- name: list_instances
-- silent_for: seconds since the last heartbeat, on the server's clock (the reader's clock
-- may be off: it is not asked).
SELECT *, {server_now} - heartbeat_at AS silent_for FROM instances ORDER BY started_at, id;

-- One round trip per transition (issue 20). Each fenced write is one statement in its own
-- transaction (autocommit): the update named in {update} (a fenced_* query above), its
-- ledger entry, or the fenced_out entry when the update changed nothing, and what the
-- caller needs back. The ledger's rows are inserted by one INSERT in the order listed (the
-- event first, then its spend), so their seq keeps that order. "before" reads the row as
-- the statement found it (the statement's snapshot), for the account of a fenced_out entry.
-- {commit}: commit_durable, or commit_async for a transition recovery can redo.
-- name: one_trip_fenced
WITH before AS (SELECT account FROM jobs WHERE id = %(id)s),
j AS ({update}
      RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, %(event)s, j.id, j.account, %(token)s, %(detail)s FROM j
      UNION ALL
      SELECT {server_now}, 'fenced_out', %(id)s, (SELECT account FROM before), %(token)s,
             %(fenced_detail)s
       WHERE NOT EXISTS (SELECT 1 FROM j))
SELECT account FROM j WHERE {commit};

-- name: one_trip_submitting
-- The intent and its spend (the job's price, unless this is the same intent again: an
-- unresolved submission re-entering SUBMITTING sends no create, its spend was written with
-- the first). A refusal while the claim held says the lease was too short (base.short_lease).
WITH before AS (
    SELECT account, client_token, metadata,
           CASE WHEN claim_token = %(token)s AND state = 'CLAIMED'
                     AND provider_job_id IS NULL
                THEN lease_until - {server_now} END AS lease_left
      FROM jobs WHERE id = %(id)s),
j AS ({update}
      RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, 'submitting', j.id, j.account, %(token)s, %(detail)s FROM j
      UNION ALL
      SELECT {server_now}, 'spend', j.id, j.account, %(token)s,
             jsonb_build_object('usd', b.metadata -> 'price')
        FROM j, before AS b
       WHERE jsonb_typeof(b.metadata -> 'price') = 'number'
         AND b.client_token IS DISTINCT FROM %(client_token)s
      UNION ALL
      SELECT {server_now}, 'fenced_out', %(id)s, (SELECT account FROM before), %(token)s,
             %(fenced_detail)s || COALESCE((
                 SELECT jsonb_build_object(
                            'why', 'lease too short for a create',
                            'lease_left', round(b.lease_left::numeric, 3),
                            'min_lease', %(min_lease)s::double precision)
                   FROM before AS b
                  WHERE b.lease_left IS NOT NULL
                    AND %(min_lease)s::double precision IS NOT NULL), '{}'::jsonb)
       WHERE NOT EXISTS (SELECT 1 FROM j))
SELECT account FROM j WHERE {commit};

-- name: one_trip_forget
-- The forgetting (reconciled_absent, intent_withdrawn) and, in the same statement for
-- intent_withdrawn only, the spend entry giving the intent's price back (store/spend.py
-- withdrawn_spend): that create was never sent, so the one this claim sends counts once.
WITH before AS (SELECT account, client_token, metadata FROM jobs WHERE id = %(id)s),
j AS ({update}
      RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, %(event)s, j.id, j.account, %(token)s, %(detail)s FROM j
      UNION ALL
      SELECT {server_now}, 'spend', j.id, j.account, %(token)s,
             jsonb_build_object('usd', -((b.metadata ->> 'price')::double precision),
                                'refund', true, 'why', %(why)s::text)
        FROM j, before AS b
       WHERE jsonb_typeof(b.metadata -> 'price') = 'number' AND b.client_token IS NOT NULL
         AND %(event)s::text = 'intent_withdrawn'
      UNION ALL
      SELECT {server_now}, 'fenced_out', %(id)s, (SELECT account FROM before), %(token)s,
             %(fenced_detail)s
       WHERE NOT EXISTS (SELECT 1 FROM j))
SELECT account FROM j WHERE {commit};

-- name: one_trip_submitted
-- The provider job id, unless another job of this provider and account holds that render
-- (render_holder, put in by pg_sql.fenced_sql; the unique index jobs_render_once settles a
-- race): then nothing is written and the holder comes back (RenderAlreadyRecorded).
WITH before AS (SELECT account FROM jobs WHERE id = %(id)s),
h AS (SELECT holder AS id FROM ({render_holder}) AS hh LIMIT 1),
j AS ({update}
         AND NOT EXISTS (SELECT 1 FROM h)
      RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, 'submitted', j.id, j.account, %(token)s, %(detail)s FROM j
      UNION ALL
      SELECT {server_now}, 'fenced_out', %(id)s, (SELECT account FROM before), %(token)s,
             %(fenced_detail)s
       WHERE NOT EXISTS (SELECT 1 FROM j) AND NOT EXISTS (SELECT 1 FROM h))
SELECT (SELECT account FROM j) AS account, (SELECT id FROM h) AS holder
 WHERE (EXISTS (SELECT 1 FROM j) OR EXISTS (SELECT 1 FROM h)) AND {commit};

-- name: one_trip_completed
-- The completion, and the provider's reported cost correcting the price its intent wrote
-- (a spend entry of the difference, when there is one).
WITH before AS (
    SELECT account,
           COALESCE(CASE WHEN jsonb_typeof(metadata -> 'price') = 'number'
                         THEN (metadata ->> 'price')::double precision END, 0.0) AS price
      FROM jobs WHERE id = %(id)s),
j AS ({update}
      RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, 'completed', j.id, j.account, %(token)s, %(detail)s FROM j
      UNION ALL
      SELECT {server_now}, 'spend', j.id, j.account, %(token)s,
             jsonb_build_object(
                 'usd', round((%(cost)s::double precision - b.price)::numeric, 6),
                 'reported_cost', %(cost)s::double precision)
        FROM j, before AS b
       WHERE %(cost)s::double precision IS NOT NULL
         AND abs(%(cost)s::double precision - b.price) > %(slack)s::double precision
      UNION ALL
      SELECT {server_now}, 'fenced_out', %(id)s, (SELECT account FROM before), %(token)s,
             %(fenced_detail)s
       WHERE NOT EXISTS (SELECT 1 FROM j))
SELECT account FROM j WHERE {commit};

-- name: commit_durable
TRUE

-- name: commit_async
-- A transition recovery can redo (docs/design-notes.md, durability: a claim, a progress
-- note, the switch to downloading, a download's hash): its transaction commits without
-- waiting for the WAL's flush (the next durable commit flushes it). set_config(..., true)
-- lasts until the transaction's end, which reads it when it commits (a statement sent in
-- autocommit is a transaction of its own); the subquery is evaluated once, before any row
-- (a one-time filter), and always holds.
(SELECT set_config('synchronous_commit', 'off', true)) = 'off'

-- name: claim_gate
AND EXISTS (SELECT 1 FROM room)

-- name: claim_provider
(SELECT provider FROM room)

-- name: claim_fast
-- The claim in one statement, run right after lock_account in the same transaction (its
-- own snapshot, taken once the account's row lock is held, counts every live render of
-- every machine): the account's room (enabled, usable, not cooling down by the server's
-- clock, live renders under its limit), the next claimable job ({claimable}: next_claimable
-- with claim_gate: no job is looked at or locked without room), the claim and its ledger
-- entry; the transaction commits without waiting for the WAL's flush (commit_async). A
-- candidate a spend cap has to look at (it needs a create and its batch or the
-- account has a cap) is not claimed here: candidate_id says there is one, and the store
-- claims it the long way (lock_batch, the spend sums), in a transaction of its own. So is
-- a candidate needing a create on an account whose fresh view publishes limits or a
-- balance (issue 32 items 3 and 4: store/provider_limits.py, store/balance.py).
WITH room AS (
    SELECT a.name, a.provider, a.settings -> 'daily_cap' AS daily_cap FROM accounts AS a
     WHERE a.name = %(account)s AND a.enabled AND a.status IN ('ready', 'rate_limited')
       AND NOT COALESCE(a.cooldown_until > {server_now}, FALSE)
       AND (SELECT COUNT(*) FROM jobs
             WHERE account = a.name
               AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING'))
           < a.capacity),
candidate AS ({claimable}),
checked AS (
    SELECT c.id, {row_problem} AS problem FROM candidate AS c JOIN jobs AS jj ON jj.id = c.id),
refused AS (
    UPDATE jobs
       SET {refuse_set},
           error_message = %(refusal_prefix)s || k.problem || %(refusal_suffix)s
      FROM checked AS k
     WHERE jobs.id = k.id AND k.problem IS NOT NULL AND jobs.state IN ('QUEUED', 'RETRY_WAIT')
    RETURNING jobs.id, k.problem),
rl AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
       SELECT {server_now}, 'row_refused', rf.id, NULL, NULL,
              jsonb_build_object('problem', rf.problem, 'by', %(owner)s::text)
         FROM refused AS rf),
free AS (
    SELECT c.id FROM candidate AS c, room AS r
     WHERE (c.provider_job_id IS NOT NULL OR c.client_token IS NOT NULL
            OR (jsonb_typeof(c.max_spend) IS DISTINCT FROM 'number'
                AND jsonb_typeof(r.daily_cap) IS DISTINCT FROM 'number'))
       AND NOT EXISTS (SELECT 1 FROM checked AS k WHERE k.problem IS NOT NULL)
       AND (c.provider_job_id IS NOT NULL OR NOT EXISTS (
            SELECT 1 FROM account_views AS v
             WHERE v.account = r.name
               AND (v.limits <> '[]'::jsonb OR v.balance_amount IS NOT NULL)
               AND v.read_at BETWEEN {server_now} - %(view_fresh_seconds)s::double precision
                                 AND {server_now} + %(view_fresh_seconds)s::double precision))),
j AS (
    UPDATE jobs
       SET state = 'CLAIMED', account = %(account)s, claim_token = %(token)s,
           lease_owner = %(owner)s, lease_until = {server_now} + %(lease_seconds)s,
           attempts = attempts + 1,
           started_at = COALESCE(started_at, %(now)s), updated_at = %(now)s,
           error_class = NULL, error_label = NULL, error_message = NULL
     WHERE id = (SELECT id FROM free) AND state IN ('QUEUED', 'RETRY_WAIT')
    RETURNING *),
l AS (INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
      SELECT {server_now}, 'claimed', j.id, %(account)s, %(token)s,
             jsonb_build_object('attempt', j.attempts, 'owner', %(owner)s::text,
                                'resume', j.provider_job_id IS NOT NULL)
        FROM j)
SELECT r.room_ok, c.id AS candidate_id, rf.id AS refused_id, j.*
  FROM (SELECT EXISTS (SELECT 1 FROM room) AS room_ok) AS r
  LEFT JOIN candidate AS c ON TRUE
  LEFT JOIN refused AS rf ON TRUE
  LEFT JOIN j ON TRUE
 WHERE {commit_async};

-- name: claim_by_token
-- A claim whose COMMIT went unanswered (claim_fast): the row carrying its token, read once
-- the account's row lock is free again (the lost transaction held it: it has ended).
SELECT * FROM jobs
 WHERE account = %(account)s AND state = 'CLAIMED' AND claim_token = %(token)s;

-- name: lock_account_for_share
SELECT name FROM accounts WHERE name = %(name)s FOR SHARE;

-- Transactions sent whole in one pipeline (one round trip): a connection in autocommit
-- opens and ends them itself.
-- name: begin
BEGIN;

-- name: commit
COMMIT;

-- Group commit of the render transitions (pg_group.py): the group's transaction id, read
-- first, so a group whose COMMIT went unanswered can be asked about (group_status);
-- group_begin_async also lets the group commit without waiting for the WAL's flush (none of
-- its writes needs it: commit_async).
-- name: group_begin
SELECT txid_current() AS xid;

-- name: group_begin_async
SELECT txid_current() AS xid, set_config('synchronous_commit', 'off', true) AS sync;

-- name: group_status
-- 'committed', 'aborted' or 'in progress' (the lost connection's transaction has not ended
-- yet); NULL: too old to say (PostgreSQL 10 and later).
SELECT txid_status(%(xid)s) AS status;

-- name: settle_lock_timeout
-- Reading back a write whose COMMIT went unanswered waits this long for that transaction's
-- row lock (it ends within milliseconds when the COMMIT arrived); longer: the outcome stays
-- unknown (a JournalError).
SET LOCAL lock_timeout = '15s';

-- Opening: the schema, its version and the database's identity.
-- name: create_schema
-- {schema}: the schema's name, checked to be a plain name (letters, digits, _) first.
CREATE SCHEMA IF NOT EXISTS "{schema}";

-- name: advisory_xact_lock
-- MIGRATION_LOCK (one migrator at a time), IMPORT_LOCK (imports with a queue limit count
-- one after the other): held until the transaction ends.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: meta_exists
SELECT to_regclass('reelqueue_meta') IS NOT NULL AS ok;

-- name: tables_in_schema
SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema();

-- name: insert_schema_version
INSERT INTO reelqueue_meta (key, value) VALUES ('schema_version', %(version)s);

-- name: get_schema_version
SELECT value FROM reelqueue_meta WHERE key = 'schema_version';

-- name: set_schema_version
UPDATE reelqueue_meta SET value = %(version)s WHERE key = 'schema_version';

-- name: get_database_id
SELECT value FROM reelqueue_meta WHERE key = 'database_id';

-- name: make_database_id
-- Made once by whoever opens the database first; kept by dumps and restores.
INSERT INTO reelqueue_meta (key, value)
VALUES ('database_id', md5(random()::text || clock_timestamp()::text || pg_backend_pid()))
ON CONFLICT (key) DO NOTHING;

-- A listing's job columns (store/listing.py): long text cut here, on the server, with
-- the marker '… [cut: N bytes]'; a JSON document over its bound becomes {"cut": why}; a
-- route too long to parse is left out. Only listings: get_job and the engine's reads
-- keep the whole row. {list_...}: LIST_LIMITS. api.sql's lists use these blocks too.
-- name: listed_job_columns
id,
batch_id,
CASE WHEN octet_length(job_key) > {list_path_chars} AND char_length(left(job_key, {list_path_chars} + 1)) > {list_path_chars}
     THEN left(job_key, {list_path_chars}) || '… [cut: ' || octet_length(job_key) || ' bytes]'
     ELSE job_key END AS job_key,
row_number,
CASE WHEN octet_length(name) > {list_name_chars} AND char_length(left(name, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(name, {list_name_chars}) || '… [cut: ' || octet_length(name) || ' bytes]'
     ELSE name END AS name,
CASE WHEN octet_length(prompt) > {list_prompt_chars} AND char_length(left(prompt, {list_prompt_chars} + 1)) > {list_prompt_chars}
     THEN left(prompt, {list_prompt_chars}) || '… [cut: ' || octet_length(prompt) || ' bytes]'
     ELSE prompt END AS prompt,
CASE WHEN octet_length(provider) > {list_name_chars} AND char_length(left(provider, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(provider, {list_name_chars}) || '… [cut: ' || octet_length(provider) || ' bytes]'
     ELSE provider END AS provider,
CASE WHEN octet_length(params::text) > {list_json_bytes}
     THEN jsonb_build_object('cut', octet_length(params::text) || ' bytes')
     ELSE params END AS params,
CASE WHEN octet_length(pinned_account) > {list_name_chars} AND char_length(left(pinned_account, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(pinned_account, {list_name_chars}) || '… [cut: ' || octet_length(pinned_account) || ' bytes]'
     ELSE pinned_account END AS pinned_account,
priority,
CASE WHEN octet_length(output_path) > {list_path_chars} AND char_length(left(output_path, {list_path_chars} + 1)) > {list_path_chars}
     THEN left(output_path, {list_path_chars}) || '… [cut: ' || octet_length(output_path) || ' bytes]'
     ELSE output_path END AS output_path,
state,
attempts,
max_attempts,
CASE WHEN octet_length(account) > {list_name_chars} AND char_length(left(account, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(account, {list_name_chars}) || '… [cut: ' || octet_length(account) || ' bytes]'
     ELSE account END AS account,
CASE WHEN octet_length(claim_token) > {list_name_chars} AND char_length(left(claim_token, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(claim_token, {list_name_chars}) || '… [cut: ' || octet_length(claim_token) || ' bytes]'
     ELSE claim_token END AS claim_token,
CASE WHEN octet_length(lease_owner) > {list_name_chars} AND char_length(left(lease_owner, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(lease_owner, {list_name_chars}) || '… [cut: ' || octet_length(lease_owner) || ' bytes]'
     ELSE lease_owner END AS lease_owner,
lease_until,
CASE WHEN octet_length(client_token) > {list_name_chars} AND char_length(left(client_token, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(client_token, {list_name_chars}) || '… [cut: ' || octet_length(client_token) || ' bytes]'
     ELSE client_token END AS client_token,
CASE WHEN octet_length(provider_job_id) > {list_name_chars} AND char_length(left(provider_job_id, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(provider_job_id, {list_name_chars}) || '… [cut: ' || octet_length(provider_job_id) || ' bytes]'
     ELSE provider_job_id END AS provider_job_id,
CASE WHEN octet_length(sub_status) > {list_name_chars} AND char_length(left(sub_status, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(sub_status, {list_name_chars}) || '… [cut: ' || octet_length(sub_status) || ' bytes]'
     ELSE sub_status END AS sub_status,
progress,
run_after,
output_size,
CASE WHEN octet_length(output_sha256) > {list_name_chars} AND char_length(left(output_sha256, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(output_sha256, {list_name_chars}) || '… [cut: ' || octet_length(output_sha256) || ' bytes]'
     ELSE output_sha256 END AS output_sha256,
cost,
error_class,
CASE WHEN octet_length(error_label) > {list_name_chars} AND char_length(left(error_label, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(error_label, {list_name_chars}) || '… [cut: ' || octet_length(error_label) || ' bytes]'
     ELSE error_label END AS error_label,
CASE WHEN octet_length(error_message) > {list_error_chars} AND char_length(left(error_message, {list_error_chars} + 1)) > {list_error_chars}
     THEN left(error_message, {list_error_chars}) || '… [cut: ' || octet_length(error_message) || ' bytes]'
     ELSE error_message END AS error_message,
created_at,
updated_at,
started_at,
finished_at,
CASE WHEN octet_length(metadata::text) > {list_json_bytes}
     THEN jsonb_build_object('cut', octet_length(metadata::text) || ' bytes')
     ELSE metadata END AS metadata,
CASE WHEN octet_length(output_host) > {list_name_chars} AND char_length(left(output_host, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(output_host, {list_name_chars}) || '… [cut: ' || octet_length(output_host) || ' bytes]'
     ELSE output_host END AS output_host,
CASE WHEN octet_length(output_part) > {list_path_chars} AND char_length(left(output_part, {list_path_chars} + 1)) > {list_path_chars}
     THEN left(output_part, {list_path_chars}) || '… [cut: ' || octet_length(output_part) || ' bytes]'
     ELSE output_part END AS output_part,
CASE WHEN octet_length(route) > {list_route_chars} AND char_length(left(route, {list_route_chars} + 1)) > {list_route_chars}
     THEN NULL ELSE route END AS route,
-- the review (issue 35): decided_by is bounded by its CHECK
decision, rating, decided_at, decided_by, decision_version


-- A listing's batch columns (the same policy; list_batches).
-- name: listed_batch_columns
id,
CASE WHEN octet_length(name) > {list_name_chars} AND char_length(left(name, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(name, {list_name_chars}) || '… [cut: ' || octet_length(name) || ' bytes]'
     ELSE name END AS name,
CASE WHEN octet_length(source_path) > {list_path_chars} AND char_length(left(source_path, {list_path_chars} + 1)) > {list_path_chars}
     THEN left(source_path, {list_path_chars}) || '… [cut: ' || octet_length(source_path) || ' bytes]'
     ELSE source_path END AS source_path,
CASE WHEN octet_length(output_dir) > {list_path_chars}
          AND char_length(left(output_dir, {list_path_chars} + 1)) > {list_path_chars}
     THEN '' ELSE output_dir END AS output_dir,
max_attempts,
CASE WHEN octet_length(settings::text) > {list_settings_bytes}
     THEN jsonb_strip_nulls(jsonb_build_object(
            'cut', octet_length(settings::text) || ' bytes',
            'paused', settings -> 'paused', 'max_spend', settings -> 'max_spend'))
     ELSE settings END AS settings,
created_at

-- A listing's ledger columns (the same policy).
-- name: listed_ledger_columns
seq, at,
CASE WHEN octet_length(event) > {list_name_chars} AND char_length(left(event, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(event, {list_name_chars}) || '… [cut: ' || octet_length(event) || ' bytes]'
     ELSE event END AS event,
job_id,
CASE WHEN octet_length(account) > {list_name_chars} AND char_length(left(account, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(account, {list_name_chars}) || '… [cut: ' || octet_length(account) || ' bytes]'
     ELSE account END AS account,
CASE WHEN octet_length(claim_token) > {list_name_chars} AND char_length(left(claim_token, {list_name_chars} + 1)) > {list_name_chars}
     THEN left(claim_token, {list_name_chars}) || '… [cut: ' || octet_length(claim_token) || ' bytes]'
     ELSE claim_token END AS claim_token,
CASE WHEN octet_length(detail::text) > {list_json_bytes}
     THEN jsonb_build_object('cut', octet_length(detail::text) || ' bytes')
     ELSE detail END AS detail

-- name: list_jobs
-- %(batch_id)s, %(states)s: NULL for all; %(limit)s NULL: no limit.
SELECT {listed_job_columns} FROM jobs
 WHERE (%(batch_id)s::bigint IS NULL OR batch_id = %(batch_id)s::bigint)
   AND (%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))
 ORDER BY id
 LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_batches
SELECT COUNT(*) FROM batches;

-- The wake-up listener (postgres_notify.py).
-- name: wake_triggers
SELECT t.tgname AS name, c.relname AS tab, p.proname AS func FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
 WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal;

-- name: current_schema
SELECT current_schema() AS s;

-- name: listen_wake
-- postgres_notify.CHANNEL
LISTEN reelqueue_wake;

-- Rows are untrusted input (issue 21; domain/row_limits.py): a job row is checked before
-- it is claimed, on the server, so an oversized value never crosses the wire and a JSON
-- document nested too deep is never parsed by the client. The bounds come from
-- ROW_LIMITS; the depth (16) is MAX_JSON_DEPTH (a jsonpath's level takes no parameter;
-- tests/store/test_row_limits.py checks 15 passes and 16 is refused). {row_problem} in
-- claim_fast and row_problem is this block, on the row aliased jj.
-- name: row_problem_expr
CASE
  WHEN jsonb_typeof(jj.params) IS DISTINCT FROM 'object'
    THEN 'its parameters are not a JSON object'
  WHEN octet_length(jj.prompt) > %(max_prompt_bytes)s
    THEN format('its prompt is %%s bytes (at most %%s)', octet_length(jj.prompt),
                %(max_prompt_bytes)s)
  WHEN octet_length(jj.params::text) > %(max_params_bytes)s
    THEN format('its parameters are %%s bytes (at most %%s)', octet_length(jj.params::text),
                %(max_params_bytes)s)
  WHEN jsonb_path_exists(jj.params, 'strict $.**{16}')
    THEN 'its parameters are nested 16 levels deep or more'
  WHEN octet_length(jj.name) > %(max_name_bytes)s
    THEN format('its name is %%s bytes (at most %%s)', octet_length(jj.name),
                %(max_name_bytes)s)
  WHEN octet_length(jj.output_path) > %(max_path_bytes)s
    THEN format('its output path is %%s bytes (at most %%s)', octet_length(jj.output_path),
                %(max_path_bytes)s)
  WHEN octet_length(jj.job_key) > %(max_key_bytes)s
    THEN format('its job key is %%s bytes (at most %%s)', octet_length(jj.job_key),
                %(max_key_bytes)s)
  WHEN octet_length(jj.route) > %(max_route_bytes)s
    THEN format('its route is %%s bytes (at most %%s)', octet_length(jj.route),
                %(max_route_bytes)s)
END

-- name: row_problem
SELECT {row_problem} AS problem FROM jobs AS jj WHERE jj.id = %(id)s;

-- name: refuse_row
-- The row keeps the start of its prompt and none of its parameters (no later read fetches
-- the oversized value); its key becomes its own, so importing the sheet's row again adds
-- it afresh.
UPDATE jobs SET {refuse_set}, error_message = %(message)s
 WHERE id = %(id)s AND state IN ('QUEUED', 'RETRY_WAIT');

-- name: refuse_set
-- What refusing a row sets (refuse_row and claim_fast's refused CTE: {refuse_set}).
state = 'FAILED', finished_at = %(now)s, updated_at = %(now)s,
claim_token = NULL, lease_owner = NULL, lease_until = NULL,
prompt = left(prompt, %(kept_prompt_chars)s), params = '{}'::jsonb,
name = left(name, 200), output_path = left(output_path, 1024),
job_key = 'row-refused:' || jobs.id::text, route = NULL, route_order = NULL,
error_class = 'permanent', error_label = 'invalid input'

-- Review (issue 35 item 2, domain/review.py) -------------------------------------------
-- name: set_review
-- A reviewer's change, written only if the row still has the version the reviewer saw
-- (compare-and-set) and the take did not fail and was not cancelled.
UPDATE jobs SET decision = %(decision)s, rating = %(rating)s, decided_at = %(now)s,
       decided_by = %(by)s, decision_version = decision_version + 1
 WHERE id = %(id)s AND decision_version = %(seen)s
   AND state NOT IN ('FAILED', 'CANCELLED')
 RETURNING *;

-- name: family_picks
-- The picked takes of a batch and its re-rolls (batches whose settings name it in
-- reroll_of) but :id: one pick per take group (the caller compares the groups).
SELECT id, job_key, rating, decision_version FROM jobs
 WHERE decision = 'pick' AND id <> %(id)s
   AND (batch_id = %(root)s OR batch_id IN (
        SELECT b.id FROM batches b
         WHERE b.settings @> jsonb_build_object('reroll_of', %(root)s::bigint)));

-- name: move_pick
-- A pick moved to another take of its group: this one is left undecided (its rating kept).
UPDATE jobs SET decision = 'none', decided_at = %(now)s, decided_by = %(by)s,
       decision_version = decision_version + 1
 WHERE id = %(id)s AND decision = 'pick'
 RETURNING decision_version;
