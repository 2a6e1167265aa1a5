-- Named queries of the SQLite store. Only reelqueue/store/sqlite.py knows these names.
-- Parameters are named (:now, :token...). The current time is always a parameter.

-- name: insert_batch
INSERT INTO batches (name, source_path, output_dir, max_attempts, settings, created_at)
VALUES (:name, :source_path, :output_dir, :max_attempts, :settings, :now)
RETURNING id;

-- name: get_batch
SELECT * FROM batches WHERE id = :id;

-- name: newest_batch_id
-- The newest batch's id (NULL: none yet): the engine reads the accounts' views again
-- before a new batch's first claim (engine/account_views.py).
SELECT MAX(id) AS id FROM batches;

-- name: list_batches
-- A listing (store/listing.py): name and sheet path cut with the marker; a batch folder
-- over the path bound becomes '' (refused as a folder, never a cut name written to);
-- settings over their bound keep only what the engine and the views act on.
SELECT {listed_batch_columns} FROM batches ORDER BY id;

-- name: insert_job
-- Positional, one row of values: add_jobs repeats the VALUES row to insert up to 100 jobs
-- per statement (each execution opens cursors on the table and its seven indexes; before
-- schema 12 it also built the lookup tables of the CHECK constraints' IN lists). No
-- trailing semicolon, so the row can be repeated.
INSERT OR IGNORE INTO jobs (batch_id, job_key, row_number, name, prompt, provider, params,
                            pinned_account, priority, output_path, max_attempts,
                            created_at, updated_at, metadata, route, route_order)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: recent_render_times
-- The newest finished renders' times (claim to completion) with what they are compared by
-- (routing's "fastest": domain/render_times.py).
SELECT provider, params, finished_at - started_at AS seconds
  FROM jobs
 WHERE state = 'COMPLETED' AND started_at IS NOT NULL AND finished_at IS NOT NULL
 ORDER BY finished_at DESC
 LIMIT :limit;

-- name: takeovers
-- Routed jobs each account took over from another provider at claim (issue 24): the
-- ledger's handed_over entries written by a claim, by account and the provider left.
SELECT account, json_extract(detail, '$.from') AS came_from, COUNT(*) AS n
  FROM ledger
 WHERE event = 'handed_over' AND account IS NOT NULL
   AND json_valid(detail) AND json_extract(detail, '$.at') = 'claim'
 GROUP BY account, came_from;

-- name: count_waiting
SELECT COUNT(*) FROM jobs WHERE state IN ('QUEUED', 'RETRY_WAIT');

-- name: get_job
SELECT * FROM jobs WHERE id = :id;

-- name: get_job_for_update
-- The job a write is about to change (PostgreSQL locks its row; here the write
-- transaction's BEGIN IMMEDIATE already holds the file's write lock).
SELECT * FROM jobs WHERE id = :id;

-- name: counts_by_state
SELECT state, COUNT(*) AS count FROM jobs GROUP BY state;

-- name: live_by_account
SELECT account, COUNT(*) AS count FROM jobs
 WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 GROUP BY account;

-- name: live_count
SELECT COUNT(*) FROM jobs
 WHERE account = :account AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: claim_account
-- The account a claim is for, with its renders in flight (live_count) and whether it is
-- cooling down (on the caller's clock: one machine) in the same read (sql_journal's
-- _claim_room: the claim's write lock holds them until it commits).
-- The live renders are counted state by state (four seeks of jobs_live_by_account): an IN
-- list of four states would be a lookup table built for every claim (issue 20).
SELECT a.*, (SELECT COUNT(*) FROM jobs WHERE account = a.name AND state = 'CLAIMED')
            + (SELECT COUNT(*) FROM jobs WHERE account = a.name AND state = 'SUBMITTING')
            + (SELECT COUNT(*) FROM jobs WHERE account = a.name AND state = 'RENDERING')
            + (SELECT COUNT(*) FROM jobs WHERE account = a.name AND state = 'DOWNLOADING')
         AS live,
       COALESCE(a.cooldown_until > :now, 0) AS cooling
  FROM accounts a WHERE a.name = :name;

-- name: claim_view
-- The account's view (issue 32 item 3), read in the claim's write transaction with the
-- claim's clock (store/provider_limits.py decides what it gates).
SELECT v.*, :now AS now FROM account_views v WHERE v.account = :account;

-- name: live_of_model
-- The account's renders of one model in flight (a job without a model is the default's):
-- the few live rows of the account (jobs_live_by_account), each one's model read.
SELECT COUNT(*) FROM jobs INDEXED BY jobs_live_by_account
 WHERE account = :account AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND COALESCE(NULLIF(json_extract(params, '$.model'), ''), :default_model, '') = :model;

-- name: creates_since
-- What counts against a model's daily limit beyond the provider's used_today at the read:
-- the creates of that model on the account written since the read (their submitting
-- entries, ledger_creates: schema 14), and its claimed jobs of that model that will create.
SELECT (SELECT COUNT(*) FROM ledger l INDEXED BY ledger_creates JOIN jobs j ON j.id = l.job_id
         WHERE l.event = 'submitting' AND l.account = :account AND l.at >= :since
           AND COALESCE(NULLIF(json_extract(j.params, '$.model'), ''), :default_model, '')
               = :model)
     + (SELECT COUNT(*) FROM jobs INDEXED BY jobs_live_by_account
         WHERE account = :account AND state = 'CLAIMED' AND client_token IS NULL
           AND COALESCE(NULLIF(json_extract(params, '$.model'), ''), :default_model, '')
               = :model);

-- name: pending_usd
-- What the account's published balance cannot include yet (issue 32 item 4,
-- store/balance.py), in USD (the jobs' stamped price), with how many have no price: each
-- create written since the read (ledger_creates), each claimed job that will create, and
-- (:every_live) every other render in flight. Read in the claim's write transaction.
SELECT COALESCE(SUM(price), 0) AS usd, COUNT(*) - COUNT(price) AS unpriced FROM (
    SELECT CASE WHEN json_type(j.metadata, '$.price') IN ('integer', 'real')
                THEN json_extract(j.metadata, '$.price') END AS price
      FROM ledger l INDEXED BY ledger_creates JOIN jobs j ON j.id = l.job_id
     WHERE l.event = 'submitting' AND l.account = :account AND l.at >= :since
    UNION ALL
    SELECT CASE WHEN json_type(metadata, '$.price') IN ('integer', 'real')
                THEN json_extract(metadata, '$.price') END
      FROM jobs INDEXED BY jobs_live_by_account
     WHERE account = :account
       AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
       AND ((state = 'CLAIMED' AND client_token IS NULL)
            OR (:every_live AND NOT EXISTS (
                SELECT 1 FROM ledger l2 WHERE l2.job_id = jobs.id
                   AND l2.event = 'submitting' AND l2.at >= :since))));

-- name: count_batches
SELECT COUNT(*) FROM batches;

-- name: insert_account
INSERT INTO accounts (name, provider, capacity, position, base_url, key_ref, settings,
                      created_at)
VALUES (:name, :provider, :capacity,
        (SELECT COALESCE(MAX(position), 0) + 1 FROM accounts),
        :base_url, :key_ref, :settings, :now);

-- name: get_account
SELECT * FROM accounts WHERE name = :name;

-- name: list_accounts
SELECT * FROM accounts ORDER BY position, name;

-- name: delete_account
DELETE FROM accounts WHERE name = :name;

-- name: put_account_view
-- An account's view (issue 32 item 2), one row per account: an older reading never
-- replaces a newer one (two machines, or a refresh and the engine, read close together).
INSERT INTO account_views (account, organization_id, balance_amount, balance_unit, limits,
                           read_at, read_by, problem)
VALUES (:account, :organization_id, :balance_amount, :balance_unit, :limits, :read_at,
        :read_by, :problem)
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
DELETE FROM account_views WHERE account = :account;

-- name: update_account
UPDATE accounts
   SET capacity = COALESCE(:capacity, capacity),
       enabled = COALESCE(:enabled, enabled),
       base_url = COALESCE(:base_url, base_url),
       settings = CASE WHEN :settings IS NULL THEN settings
                       ELSE json_patch(settings, :settings) END
 WHERE name = :name;

-- name: set_account_status
UPDATE accounts
   SET status = :status, status_detail = :detail, cooldown_until = :cooldown_until
 WHERE name = :name;

-- name: next_claimable
-- Three index seeks, then the best of their (at most three) answers by priority and id:
-- queued jobs any account may take, queued jobs bound to this account (pinned, or holding
-- its render), and retry waits that are due. The affinity conditions stay as written, so
-- the answer is the same as one ordered walk over every waiting job; only the cost
-- differs: it no longer grows with the jobs pinned elsewhere or waiting for a later retry.
-- (QUEUED rows always have run_after = 0: release_to_queue with a delay makes RETRY_WAIT.)
-- A paused batch's jobs are not claimed, except those holding a render (a render in flight
-- finishes: reading it costs nothing more); the paused ids are one small list per query.
-- Spend caps (docs/design-notes.md): :skip_batches (a JSON list) are batches whose next
-- create the cap refused; :creates = 0 when the account's daily cap is reached (only jobs
-- holding a render, which cost nothing more, are taken). An empty :skip_batches ('[]', every claim
-- until a cap refuses) is not made into a lookup table (issue 20).
-- Limits from the provider (issue 32 item 3, store/provider_limits.py): :skip_models (a JSON
-- list) are the models the account may start no new render of now; a job without a model
-- is :default_model's. A job holding a render is open at the provider already: taken.
-- The answer comes with what the spend check needs (was spend_candidate: one read less
-- per claim): the job's batch, whether it needs a create, its price and its batch's cap.
SELECT j.id, j.batch_id, j.provider_job_id, j.client_token,
       json_extract(j.metadata, '$.price') AS price,
       json_extract(b.settings, '$.max_spend') AS max_spend
  FROM jobs j JOIN batches b ON b.id = j.batch_id
 WHERE j.id = (
SELECT id FROM (
    SELECT * FROM (
        SELECT id, priority FROM jobs INDEXED BY jobs_queued
         WHERE state = 'QUEUED' AND provider = :provider
           AND COALESCE(account, pinned_account) IS NULL
           AND run_after <= :now
           AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
                SELECT b.id FROM batches b WHERE json_extract(b.settings, '$.paused')))
           AND (provider_job_id IS NOT NULL OR (:creates AND (:skip_batches = '[]'
                OR batch_id NOT IN (SELECT value FROM json_each(:skip_batches)))))
           AND (provider_job_id IS NOT NULL OR :skip_models = '[]'
                OR COALESCE(NULLIF(json_extract(params, '$.model'), ''), :default_model, '')
                   NOT IN (SELECT value FROM json_each(:skip_models)))
         ORDER BY priority DESC, id
         LIMIT 1)
    UNION ALL
    SELECT * FROM (
        SELECT id, priority FROM jobs INDEXED BY jobs_queued
         WHERE state = 'QUEUED' AND provider = :provider
           AND COALESCE(account, pinned_account) = :account
           AND run_after <= :now
           AND (pinned_account IS NULL OR pinned_account = :account)
           AND (account IS NULL OR account = :account)
           AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
                SELECT b.id FROM batches b WHERE json_extract(b.settings, '$.paused')))
           AND (provider_job_id IS NOT NULL OR (:creates AND (:skip_batches = '[]'
                OR batch_id NOT IN (SELECT value FROM json_each(:skip_batches)))))
           AND (provider_job_id IS NOT NULL OR :skip_models = '[]'
                OR COALESCE(NULLIF(json_extract(params, '$.model'), ''), :default_model, '')
                   NOT IN (SELECT value FROM json_each(:skip_models)))
         ORDER BY priority DESC, id
         LIMIT 1)
    UNION ALL
    SELECT * FROM (
        SELECT id, priority FROM jobs INDEXED BY jobs_retry_due
         WHERE state = 'RETRY_WAIT' AND provider = :provider
           AND run_after <= :now
           AND (pinned_account IS NULL OR pinned_account = :account)
           AND (account IS NULL OR account = :account)
           AND (provider_job_id IS NOT NULL OR batch_id NOT IN (
                SELECT b.id FROM batches b WHERE json_extract(b.settings, '$.paused')))
           AND (provider_job_id IS NOT NULL OR (:creates AND (:skip_batches = '[]'
                OR batch_id NOT IN (SELECT value FROM json_each(:skip_batches)))))
           AND (provider_job_id IS NOT NULL OR :skip_models = '[]'
                OR COALESCE(NULLIF(json_extract(params, '$.model'), ''), :default_model, '')
                   NOT IN (SELECT value FROM json_each(:skip_models)))
         ORDER BY priority DESC, id
         LIMIT 1)
)
 ORDER BY priority DESC, id
 LIMIT 1);

-- name: claim_job
-- Returns the claimed row (RETURNING: no read after the claim).
UPDATE jobs
   SET state = 'CLAIMED', account = :account, claim_token = :token,
       lease_owner = :owner, lease_until = :lease_until, attempts = attempts + 1,
       started_at = COALESCE(started_at, :now), updated_at = :now,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = :id AND state IN ('QUEUED', 'RETRY_WAIT')
 RETURNING *;

-- name: renew_leases
-- :tokens NULL: every lease of the instance; else only the claims the engine runs. A row
-- per lease renewed.
UPDATE jobs SET lease_until = :lease_until
 WHERE lease_owner = :owner
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND (:tokens IS NULL OR claim_token IN (SELECT value FROM json_each(:tokens)))
 RETURNING id;

-- name: fenced_mark_submitting
-- :min_lease (seconds, or NULL: not checked): a create is sent only while the claim's lease
-- still holds at least that long, so it is answered or given up before anyone else may take
-- the job over (the create's timeout plus a margin).
UPDATE jobs SET state = 'SUBMITTING', client_token = :client_token, updated_at = :now
 WHERE id = :id AND claim_token = :token AND state = 'CLAIMED'
   AND provider_job_id IS NULL
   AND (:min_lease IS NULL OR lease_until - :now >= :min_lease)
 RETURNING account;

-- name: job_account
-- The job's account, for a fenced write's fenced_out entry (a fenced write that changed
-- its row has it from RETURNING).
SELECT account FROM jobs WHERE id = :id;

-- name: intent_before
-- What mark_submitting reads before its update: the client token already held (the same
-- intent again writes no second spend) and the price (metadata).
SELECT client_token, metadata FROM jobs WHERE id = :id;

-- name: submit_refusal
-- Why fenced_mark_submitting changed nothing: the claim still held but its lease was short.
SELECT lease_until - :now AS lease_left FROM jobs
 WHERE id = :id AND claim_token = :token AND state = 'CLAIMED' AND provider_job_id IS NULL;

-- name: fenced_record_submitted
-- holder: NULL (render_holder, read before it, answers the job that holds the render).
UPDATE jobs SET state = 'RENDERING', provider_job_id = :provider_job_id,
       sub_status = 'submitted', updated_at = :now
 WHERE id = :id AND claim_token = :token AND state = 'SUBMITTING'
 RETURNING account, NULL AS holder;

-- name: fenced_mark_rendering
UPDATE jobs SET state = 'RENDERING', updated_at = :now
 WHERE id = :id AND claim_token = :token AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING')
   AND provider_job_id IS NOT NULL
 RETURNING account;

-- name: fenced_record_progress
UPDATE jobs SET sub_status = :sub_status, progress = :progress, updated_at = :now
 WHERE id = :id AND claim_token = :token AND state = 'RENDERING'
 RETURNING account;

-- name: fenced_mark_downloading
-- The output path the download chose (a suffixed name when a file the journal did not
-- record holds the planned one; NULL: kept) and its temporary file; no hash recorded yet.
UPDATE jobs SET state = 'DOWNLOADING', updated_at = :now,
       output_path = COALESCE(:output_path, output_path), output_part = :part,
       output_size = NULL, output_sha256 = NULL
 WHERE id = :id AND claim_token = :token AND state = 'RENDERING'
 RETURNING account;

-- name: fenced_record_download
-- The downloaded file's size and sha256, written before it is renamed into place: the
-- only file recovery completes this job from (issue 22).
UPDATE jobs SET output_size = :size, output_sha256 = :sha256, updated_at = :now
 WHERE id = :id AND state = 'DOWNLOADING' AND claim_token = :token
 RETURNING account;

-- name: fenced_mark_completed
UPDATE jobs SET state = 'COMPLETED', output_size = :size, output_sha256 = :sha256,
       output_host = :host,
       cost = COALESCE(:cost, cost), progress = 1.0, finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = :id AND claim_token = :token AND state = 'DOWNLOADING'
 RETURNING account, metadata;

-- name: fenced_set_retry_wait
UPDATE jobs SET state = 'RETRY_WAIT', run_after = :run_after, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = CASE WHEN :keep THEN account ELSE NULL END,
       provider_job_id = CASE WHEN :keep THEN provider_job_id ELSE NULL END,
       client_token = CASE WHEN :keep THEN client_token ELSE NULL END,
       sub_status = NULL, progress = NULL,
       error_class = :error_class, error_label = :error_label, error_message = :error_message
 WHERE id = :id AND claim_token = :token
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 RETURNING account;

-- name: fenced_release_to_queue
-- Account-level trouble: the job goes back without spending the attempt it was claimed
-- with. A job that already has a render keeps it (and stays with that account); so does
-- one whose submission is unresolved (:keep_submission: its client token is asked for at
-- that account before anything is created again).
UPDATE jobs SET state = CASE WHEN :run_after > 0 THEN 'RETRY_WAIT' ELSE 'QUEUED' END,
       run_after = :run_after, attempts = MAX(attempts - 1, 0), updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = CASE WHEN provider_job_id IS NULL AND NOT :keep_submission THEN NULL
                      ELSE account END,
       client_token = CASE WHEN provider_job_id IS NULL AND NOT :keep_submission THEN NULL
                           ELSE client_token END,
       sub_status = NULL, progress = NULL,
       error_class = :error_class, error_label = :error_label, error_message = :error_message
 WHERE id = :id AND claim_token = :token
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 RETURNING account;

-- name: any_routed_waiting
-- Whether any routed job could still move to another provider (issue 24): the claim looks
-- for one only then (the partial index jobs_routed answers it without a scan).
SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_routed
                WHERE route IS NOT NULL AND state IN ('QUEUED', 'RETRY_WAIT')
                  AND provider_job_id IS NULL AND client_token IS NULL) AS found;

-- name: routed_waiting
-- Routed jobs this account's provider may take over (issue 24, docs/routing.md): waiting
-- and due, no create sent (no client token, no render), bound to no account, not in a
-- paused batch, on another provider now, with :needle ('|<provider>|') among their usable
-- candidates, and none of the providers of :free (a JSON list: those with a free slot now)
-- ranked above it (route_order; '~' is spread: no rank). store/routing.py checks each
-- answer exactly (the route, the spend caps). At most :limit, best first, with what the
-- spend check needs. A route over :max_route_bytes is not fetched (NULL, oversized set):
-- the claim refuses its row (row_problem).
SELECT j.id, j.batch_id, j.provider,
       CASE WHEN length(CAST(j.route AS BLOB)) > :max_route_bytes THEN NULL
            ELSE j.route END AS route,
       length(CAST(j.route AS BLOB)) > :max_route_bytes AS oversized,
       json_extract(j.params, '$.seed') AS seed,
       json_extract(b.settings, '$.max_spend') AS max_spend
  FROM jobs j INDEXED BY jobs_routed JOIN batches b ON b.id = j.batch_id
 WHERE j.route IS NOT NULL AND j.state IN ('QUEUED', 'RETRY_WAIT')
   AND j.provider_job_id IS NULL AND j.client_token IS NULL
   AND j.account IS NULL AND j.pinned_account IS NULL
   AND j.run_after <= :now AND j.provider <> :provider
   AND instr(j.route_order, :needle) > 0
   AND (substr(j.route_order, 1, 1) = '~' OR NOT EXISTS (
        SELECT 1 FROM json_each(:free) f
         WHERE instr(j.route_order, '|' || f.value || '|')
               BETWEEN 1 AND instr(j.route_order, :needle) - 1))
   AND j.batch_id NOT IN (SELECT b2.id FROM batches b2
                           WHERE json_extract(b2.settings, '$.paused'))
 ORDER BY j.priority DESC, j.id
 LIMIT :limit;

-- name: accounts_room
-- Every account with its renders in flight and whether it cools down (routing: which
-- providers have a free slot now). Read inside the claim's write transaction.
SELECT a.*, (SELECT COUNT(*) FROM jobs
              WHERE account = a.name
                AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')) AS live,
       COALESCE(a.cooldown_until > :now, 0) AS cooling
  FROM accounts a ORDER BY a.position, a.name;

-- name: route_take
-- A routed job moves to the claiming account's provider (issue 24), in the claim's
-- transaction: that candidate's parameters and price; only while no create of it may exist.
UPDATE jobs SET provider = :provider, params = :params, updated_at = :now,
       metadata = CASE WHEN :price IS NULL THEN json_remove(metadata, '$.price')
                       ELSE json_set(metadata, '$.price', :price) END
 WHERE id = :id AND state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL AND account IS NULL
 RETURNING id;

-- name: fenced_hand_over
-- The provider definitely refused this job (its create's parameters; a content-policy
-- refusal where the batch opted in, at the create or as its render's end): no render of it
-- is left there (a failed render is dropped, never reattached), so the job goes back to the
-- queue on its next candidate (issue 24), its route marking the refusal, without spending
-- an attempt.
UPDATE jobs SET state = 'QUEUED', run_after = 0, attempts = MAX(attempts - 1, 0),
       updated_at = :now, claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       account = NULL, client_token = NULL, provider_job_id = NULL,
       sub_status = NULL, progress = NULL, provider = :provider, params = :params,
       route = :route, route_order = :route_order,
       metadata = CASE WHEN :price IS NULL THEN json_remove(metadata, '$.price')
                       ELSE json_set(metadata, '$.price', :price) END,
       error_class = :error_class, error_label = :error_label, error_message = :error_message
 WHERE id = :id AND claim_token = :token
   AND state IN ('CLAIMED', 'RENDERING', 'SUBMITTING')
 RETURNING account;

-- name: fenced_mark_failed
-- :drop_render: the provider's render itself failed; a user's retry must not reattach it.
UPDATE jobs SET state = 'FAILED', finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       provider_job_id = CASE WHEN :drop_render THEN NULL ELSE provider_job_id END,
       error_class = :error_class, error_label = :error_label, error_message = :error_message
 WHERE id = :id AND claim_token = :token
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 RETURNING account;

-- name: fenced_park
-- Kept for the user, not moved by itself: a render whose resume keeps killing the process
-- (its provider job id), or a create whose outcome stayed unknown (its client token, to be
-- reconciled or resolved by the user: issue 19). Holds no claim and no slot.
UPDATE jobs SET state = 'PARKED', updated_at = :now, sub_status = NULL,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = :error_class, error_label = :error_label, error_message = :error_message
 WHERE id = :id AND claim_token = :token AND client_token IS NOT NULL
   AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 RETURNING account;

-- name: fenced_forget_submission
-- Reconciliation proved the earlier create absent (the provider's records, read after its
-- settle time over the whole window, hold no such render): back to CLAIMED without its
-- client token, so this claim creates once (the ledger's reconciled_absent says why).
UPDATE jobs SET state = 'CLAIMED', client_token = NULL, updated_at = :now
 WHERE id = :id AND claim_token = :token AND state = 'SUBMITTING'
   AND provider_job_id IS NULL
 RETURNING account;

-- name: attach_render
-- The user picked the render of a create whose outcome stayed unknown: the job keeps its
-- account and reads that render (never creates); a render already recorded for another job
-- is refused by the unique index jobs_render_once.
UPDATE jobs SET state = 'QUEUED', provider_job_id = :provider_job_id, attempts = 0,
       run_after = 0, finished_at = NULL, updated_at = :now, sub_status = NULL,
       progress = NULL
 WHERE id = :id AND state IN ('PARKED', 'FAILED') AND provider_job_id IS NULL
   AND client_token IS NOT NULL AND account IS NOT NULL;

-- name: unresolved_submissions
-- Every create of an account whose answer was lost and that is not settled by a render:
-- in flight, parked or failed "submit outcome unknown", or waiting with its token kept;
-- with the time its intent was first committed (the ledger's first 'submitting' entry
-- naming that client token; NULL once pruned).
SELECT jobs.*,
       (SELECT MIN(l.at) FROM ledger AS l
         WHERE l.job_id = jobs.id AND l.event = 'submitting'
           AND json_extract(l.detail, '$.client_token') = jobs.client_token) AS intent_at
  FROM jobs
 WHERE account = :account AND client_token IS NOT NULL AND provider_job_id IS NULL
   AND state NOT IN ('COMPLETED', 'CANCELLED');

-- name: render_holder
-- Another job of this job's provider and account that holds the render (a render goes to
-- one job: jobs_render_once).
SELECT other.id AS holder FROM jobs AS other, jobs AS this
 WHERE this.id = :id AND other.provider = this.provider AND other.account IS this.account
   AND other.provider_job_id = :provider_job_id AND other.id <> :id;

-- name: crash_requeues
-- How many times in a row recovery requeued this job (since the last retry wait, release
-- or user's retry).
SELECT COUNT(*) FROM ledger
 WHERE job_id = :id AND event = 'requeued' AND json_extract(detail, '$.by') = 'recovery'
   AND seq > COALESCE((SELECT MAX(seq) FROM ledger
                        WHERE job_id = :id
                          AND (event IN ('retry_wait', 'released')
                               OR (event = 'requeued'
                                   AND json_extract(detail, '$.by') = 'user'))), 0);

-- name: known_provider_job_ids
-- Which of these provider job ids a job of this account already holds (a render goes to
-- at most one job).
SELECT provider_job_id FROM jobs
 WHERE provider = :provider AND account = :account
   AND provider_job_id IN (SELECT value FROM json_each(:ids));

-- name: front_priority
-- "To the front": one above the highest priority of any job still waiting.
SELECT COALESCE(MAX(priority), 0) + 1 FROM jobs WHERE state IN ('QUEUED', 'RETRY_WAIT');

-- name: set_job_priority
-- Only jobs that can still be claimed (or are in flight and may come back) take a
-- priority; a finished job keeps the one it had.
UPDATE jobs SET priority = :priority, updated_at = :now
 WHERE id = :id AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: set_batch_priority
UPDATE jobs SET priority = :priority, updated_at = :now
 WHERE batch_id = :batch_id AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: set_batch_paused
-- Kept in the batch's settings (no schema change); resuming removes the key again.
UPDATE batches
   SET settings = CASE WHEN :paused THEN json_set(settings, '$.paused', json('true'))
                       ELSE json_remove(settings, '$.paused') END
 WHERE id = :id;

-- name: cancel_job
UPDATE jobs SET state = 'CANCELLED', finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL
 WHERE id = :id AND state NOT IN ('COMPLETED', 'FAILED', 'CANCELLED');

-- name: requeue_job
-- The user's retry. A job that has a render keeps it (and its account), unless a new seed
-- was asked for: the next claim reads it first (finished -> download, running ->
-- reattach) and creates anew only when the provider says it is gone (issue 10). A create
-- whose outcome stayed unknown keeps its client token and account (:reconcile) so the next
-- claim looks for it in the provider's records before anything is created (issue 19).
UPDATE jobs SET state = 'QUEUED', finished_at = NULL, updated_at = :now, attempts = 0,
       run_after = 0,
       account = CASE WHEN :keep AND (provider_job_id IS NOT NULL
                                      OR (:reconcile AND client_token IS NOT NULL
                                          AND error_label = 'submit outcome unknown'))
                      THEN account END,
       client_token = CASE WHEN :keep AND (provider_job_id IS NOT NULL
                                           OR (:reconcile
                                               AND error_label = 'submit outcome unknown'))
                           THEN client_token END,
       provider_job_id = CASE WHEN :keep THEN provider_job_id END,
       sub_status = NULL, progress = NULL,
       params = CASE WHEN :seed IS NULL THEN params
                     ELSE json_set(params, '$.seed', :seed) END
 WHERE id = :id AND state IN ('FAILED', 'CANCELLED', 'PARKED');

-- name: insert_ledger
INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
VALUES (:now, :event, :job_id, :account, :claim_token, :detail);

-- name: in_flight_all
SELECT * FROM jobs WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: in_flight_expired
SELECT * FROM jobs WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
   AND lease_until < :now;

-- Recovery's updates name what the plan read (recovery_plan.py): the claim token and the
-- state. A row that moved on since (its owner wrote SUBMITTING, a user cancelled it) is
-- left alone: the plan for a CLAIMED job (requeue) is wrong for a SUBMITTING one (its
-- create may be on its way). With only expired leases taken over (:any_lease false), the
-- expiry too: a lease renewed meanwhile stays put.
-- name: recover_complete
UPDATE jobs SET state = 'COMPLETED', output_size = :size, output_sha256 = :sha256,
       output_host = :host,
       progress = 1.0, finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = NULL, error_label = NULL, error_message = NULL
 WHERE id = :id AND claim_token IS :old_token
   AND state = :planned_state AND (:any_lease OR lease_until < :now);

-- name: recover_reattach
UPDATE jobs SET state = :state, claim_token = :token, lease_owner = :owner,
       lease_until = :lease_until, updated_at = :now
 WHERE id = :id AND claim_token IS :old_token
   AND state = :planned_state AND (:any_lease OR lease_until < :now);

-- name: recover_requeue
-- The claim ended in a crash (ReelQueue's fault, not the provider's): its attempt is given
-- back; recovery_plan.py fails a job whose claims keep ending in crashes instead.
UPDATE jobs SET state = 'QUEUED', run_after = 0, updated_at = :now,
       attempts = MAX(attempts - 1, 0),
       claim_token = NULL, lease_owner = NULL, lease_until = NULL, account = NULL,
       client_token = NULL, provider_job_id = NULL, sub_status = NULL, progress = NULL
 WHERE id = :id AND claim_token IS :old_token
   AND state = :planned_state AND (:any_lease OR lease_until < :now);

-- name: recover_park
-- Died inside the submit window on a provider that cannot be asked: the outcome is unknown,
-- kept for the user (never created again by itself, never counted as failed).
UPDATE jobs SET state = 'PARKED', updated_at = :now, sub_status = NULL,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = :error_class, error_label = :error_label,
       error_message = :error_message
 WHERE id = :id AND claim_token IS :old_token AND client_token IS NOT NULL
   AND state = :planned_state AND (:any_lease OR lease_until < :now);

-- name: recover_fail
UPDATE jobs SET state = 'FAILED', finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       error_class = :error_class, error_label = :error_label,
       error_message = :error_message
 WHERE id = :id AND claim_token IS :old_token
   AND state = :planned_state AND (:any_lease OR lease_until < :now);

-- The jobs table's sort, done by the journal (the window never sorts 100k rows itself).
-- {key} is one of the job_order_* expressions below, chosen by name from that list (never
-- text from outside); ties go by id, so DESC is exactly ASC reversed. No index backs these:
-- measured at 100,000 jobs each takes 60-150 ms on the journal thread, and it runs only
-- when the user sorts or the sorted column changes (docs/ui.md), while an index on a
-- column that changes with every poll (state, progress) would tax every write.
-- name: job_ids_ordered
SELECT id FROM jobs ORDER BY {key} {direction}, id {direction} LIMIT :limit OFFSET :offset;

-- name: job_order_row
row_number

-- name: job_order_name
name COLLATE NOCASE

-- name: job_order_prompt
prompt COLLATE NOCASE

-- name: job_order_account
COALESCE(account, provider || ' · any') COLLATE NOCASE

-- name: job_order_state
CASE state WHEN 'QUEUED' THEN 0 WHEN 'RETRY_WAIT' THEN 1 WHEN 'CLAIMED' THEN 2
           WHEN 'SUBMITTING' THEN 3 WHEN 'RENDERING' THEN 4 WHEN 'DOWNLOADING' THEN 5
           WHEN 'COMPLETED' THEN 6 WHEN 'PARKED' THEN 7 WHEN 'FAILED' THEN 8 ELSE 9 END

-- name: job_order_progress
progress

-- name: job_order_attempts
attempts

-- name: job_order_output
output_path COLLATE NOCASE

-- name: job_order_error
error_label COLLATE NOCASE

-- name: completed_jobs
SELECT * FROM jobs WHERE state = 'COMPLETED';

-- name: completed_outputs
SELECT id, output_path, output_size FROM jobs WHERE state = 'COMPLETED' ORDER BY id;

-- name: prune_ledger
-- Spend entries are kept: a batch's cap counts every one of them (docs "Spend caps"). So
-- is the newest entry, whatever its age: the next entry's seq is MAX(seq) + 1 (no
-- AUTOINCREMENT, schema.sql), and a reader that saw the newest seq must never see it given
-- again (the API's event stream resumes after it).
-- Which entries are old is found without an index on every entry's time (schema 12:
-- ledger_by_time holds only spend entries, the one read by time a job life pays for in
-- each commit): entries are appended as time goes, so the first one written at or after
-- :before is found by a binary search over seq (cut: about 20 lookups by seq, gaps left
-- by earlier pruning stepped over), and only entries before it are deleted. An entry out
-- of time order (a clock set back) can only be kept longer, never deleted early: each
-- deleted entry is itself older than :before. (The search is a subquery: a statement
-- that starts with WITH has no row count in Python's sqlite3.)
DELETE FROM ledger
 WHERE seq < (WITH RECURSIVE cut(lo, hi) AS (
                  SELECT COALESCE((SELECT MIN(seq) FROM ledger), 0),
                         COALESCE((SELECT MAX(seq) FROM ledger), 0)
                  UNION ALL
                  SELECT CASE WHEN (SELECT at FROM ledger WHERE seq >= (lo + hi) / 2
                                     ORDER BY seq LIMIT 1) < :before
                              THEN (lo + hi) / 2 + 1 ELSE lo END,
                         CASE WHEN (SELECT at FROM ledger WHERE seq >= (lo + hi) / 2
                                     ORDER BY seq LIMIT 1) < :before
                              THEN hi ELSE (lo + hi) / 2 END
                    FROM cut WHERE lo < hi)
              SELECT MAX(lo) FROM cut)
   AND at < :before AND event <> 'spend'
   AND seq < (SELECT MAX(seq) FROM ledger);

-- name: next_retry_at
SELECT MIN(run_after) FROM jobs WHERE state = 'RETRY_WAIT' AND run_after > :now;

-- name: next_cooldown_at
SELECT MIN(cooldown_until) FROM accounts WHERE cooldown_until > :now;

-- name: ledger_for_job
SELECT * FROM ledger WHERE job_id = :job_id ORDER BY seq;

-- name: ledger_all
SELECT * FROM ledger ORDER BY seq;

-- name: ledger_after
SELECT {listed_ledger_columns} FROM ledger WHERE seq > :seq ORDER BY seq LIMIT :limit;

-- name: ledger_tail
-- The last :limit entries (of one job, or of all when :job_id is null), oldest first; a
-- listing (the window follows the journal by it): long values cut.
SELECT * FROM (SELECT {listed_ledger_columns} FROM ledger
                WHERE :job_id IS NULL OR job_id = :job_id
                ORDER BY seq DESC LIMIT :limit)
 ORDER BY seq;

-- name: doctor_completed_twice
SELECT job_id, COUNT(*) AS n FROM ledger WHERE event = 'completed'
 GROUP BY job_id HAVING n > 1;

-- name: doctor_live_claims
SELECT id, state, lease_owner FROM jobs
 WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING');

-- name: doctor_over_capacity
SELECT a.name, a.capacity, COUNT(j.id) AS live FROM accounts a
  JOIN jobs j ON j.account = a.name
   AND j.state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')
 GROUP BY a.name HAVING live > a.capacity;

-- name: update_batch_settings
-- A JSON merge patch (a null removes the key).
UPDATE batches SET settings = json_patch(settings, :patch) WHERE id = :id;

-- name: spend_of_batch
SELECT COALESCE(SUM(json_extract(l.detail, '$.usd')), 0.0)
  FROM jobs j JOIN ledger l ON l.event = 'spend' AND l.job_id = j.id
 WHERE j.batch_id = :batch;

-- name: reserved_of_batch
-- Claimed jobs that will create: their price is reserved until the intent moves it to spent.
SELECT COALESCE(SUM(json_extract(metadata, '$.price')), 0.0) FROM jobs INDEXED BY jobs_by_batch
 WHERE batch_id = :batch AND state = 'CLAIMED'
   AND provider_job_id IS NULL AND client_token IS NULL;

-- name: spend_of_account
SELECT COALESCE(SUM(json_extract(detail, '$.usd')), 0.0) FROM ledger INDEXED BY ledger_by_time
 WHERE at >= :day_start AND event = 'spend' AND account = :account;

-- name: removed_accounts_spend
-- The spend since :day_start of accounts removed since (issue 34: their renders were paid;
-- a removed account holds no claimed job, so nothing is reserved), by name.
SELECT account, COALESCE(SUM(json_extract(detail, '$.usd')), 0.0) AS usd
  FROM ledger INDEXED BY ledger_by_time
 WHERE at >= :day_start AND event = 'spend' AND account IS NOT NULL
   AND account NOT IN (SELECT name FROM accounts)
 GROUP BY account ORDER BY account;

-- name: reserved_of_account
SELECT COALESCE(SUM(json_extract(metadata, '$.price')), 0.0) FROM jobs
 WHERE account = :account AND state = 'CLAIMED'
   AND provider_job_id IS NULL AND client_token IS NULL;

-- name: capped_batches
SELECT id, json_extract(settings, '$.max_spend') AS max_spend FROM batches
 WHERE json_extract(settings, '$.max_spend') IS NOT NULL;

-- name: waiting_creates_of_batch
-- Jobs needing a create that do not fit in :room (price unknown or dearer).
SELECT COUNT(*) FROM jobs INDEXED BY jobs_by_batch
 WHERE batch_id = :batch AND state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL
   AND COALESCE(json_extract(metadata, '$.price') > :room, 1);

-- name: waiting_creates_of_account
SELECT COUNT(*) FROM jobs
 WHERE state IN ('QUEUED', 'RETRY_WAIT') AND provider = :provider
   AND provider_job_id IS NULL AND client_token IS NULL
   AND COALESCE(json_extract(metadata, '$.price') > :room, 1)
   AND (pinned_account IS NULL OR pinned_account = :account)
   AND (account IS NULL OR account = :account);

-- name: to_go_by_provider
-- What the waiting jobs will cost (store/spend.py ToGo): queued or in retry wait with no
-- create sent yet, per provider and the one account that may take them (pinned, or
-- bound: the claim hands a job bound to an account only to it); a price that is not a number (or a
-- JSON true, which json_extract reads as 1) counts as no price, as price_of says.
SELECT provider, COALESCE(pinned_account, account) AS account,
       COALESCE(SUM(CASE WHEN json_type(metadata, '$.price') IN ('integer', 'real')
                         THEN json_extract(metadata, '$.price') END), 0.0) AS usd,
       COUNT(CASE WHEN json_type(metadata, '$.price') IN ('integer', 'real')
                  THEN 1 END) AS priced,
       COUNT(CASE WHEN json_type(metadata, '$.price') IN ('integer', 'real')
                  THEN NULL ELSE 1 END) AS unpriced
  FROM jobs
 WHERE state IN ('QUEUED', 'RETRY_WAIT')
   AND provider_job_id IS NULL AND client_token IS NULL
 GROUP BY provider, COALESCE(pinned_account, account);

-- Connection set-up and transactions (sqlite.py). PRAGMA values cannot be bound: the
-- {placeholders} are filled with integers by the Python that runs them.
-- name: set_busy_timeout
PRAGMA busy_timeout = {ms};

-- name: journal_mode_wal
PRAGMA journal_mode = WAL;

-- name: synchronous_full
PRAGMA synchronous = FULL;

-- name: synchronous_normal
PRAGMA synchronous = NORMAL;

-- name: foreign_keys_on
PRAGMA foreign_keys = ON;

-- name: query_only_on
PRAGMA query_only = ON;

-- name: application_id
PRAGMA application_id;

-- name: set_application_id
PRAGMA application_id = {value};

-- name: user_version
PRAGMA user_version;

-- name: data_version
-- moves when another connection commits (SqliteStore.changed_elsewhere)
PRAGMA data_version;

-- name: set_user_version
PRAGMA user_version = {value};

-- name: count_tables
SELECT COUNT(*) FROM sqlite_master WHERE type = 'table';

-- name: cache_size
PRAGMA cache_size;

-- name: set_cache_size
PRAGMA cache_size = {value};

-- name: page_size
PRAGMA page_size;

-- name: quick_check
PRAGMA quick_check;

-- name: doctor_json_damaged
-- The JSON columns whose text is not JSON (SQLite's JSON functions refuse to read it, and
-- every query that meets the row with one: changed outside ReelQueue): (table, row, column),
-- the first 100.
SELECT 'jobs', id, 'params' FROM jobs WHERE json_valid(params) = 0
UNION ALL SELECT 'jobs', id, 'metadata' FROM jobs WHERE json_valid(metadata) = 0
UNION ALL SELECT 'jobs', id, 'route' FROM jobs WHERE route IS NOT NULL AND json_valid(route) = 0
UNION ALL SELECT 'batches', id, 'settings' FROM batches WHERE json_valid(settings) = 0
UNION ALL SELECT 'accounts', name, 'settings' FROM accounts WHERE json_valid(settings) = 0
UNION ALL SELECT 'account_views', account, 'limits' FROM account_views
           WHERE json_valid(limits) = 0
UNION ALL SELECT 'ledger', seq, 'detail' FROM ledger WHERE json_valid(detail) = 0
LIMIT 100;

-- name: begin_write
BEGIN IMMEDIATE;

-- name: commit_write
COMMIT;

-- name: rollback_write
ROLLBACK;

-- One write of a group commit (SqliteStore.write_group): undone alone if it fails.
-- name: savepoint_group_item
SAVEPOINT group_item;

-- name: release_group_item
RELEASE group_item;

-- name: rollback_to_group_item
ROLLBACK TO group_item;

-- add_jobs' reads (inside its write transaction).
-- name: next_job_id
SELECT COALESCE(MAX(id), 0) + 1 FROM jobs;

-- name: max_job_id
SELECT MAX(id) FROM jobs;

-- name: all_job_keys
SELECT job_key FROM jobs;

-- name: inserted_since
SELECT MAX(id), COUNT(*) FROM jobs WHERE id >= :first_id;

-- name: present_job_keys
-- Which of :keys (a JSON list) the journal holds.
SELECT job_key FROM jobs WHERE job_key IN (SELECT value FROM json_each(:keys));

-- name: ids_for_keys
SELECT id FROM jobs WHERE job_key IN (SELECT value FROM json_each(:keys)) ORDER BY id;

-- A listing's job columns (store/listing.py): a row with a long text over its bound is
-- listed from job_cuts (schema.sql: filled by triggers as the row is written, the text cut
-- with the marker '… [cut: N bytes]', a JSON document over its bound or not JSON at all
-- {"cut": why}, a route too long to parse left out), so a listing never reads a long
-- text whole; the listing queries join it (LEFT JOIN job_cuts c ON c.job_id = jobs.id).
-- The short words a transition writes (account, tokens, ids) are cut here, inline.
-- Only listings: get_job and the engine's reads keep the whole row.
-- name: listed_job_columns
jobs.id,
jobs.batch_id,
CASE WHEN c.job_id IS NULL THEN jobs.job_key ELSE c.job_key END AS job_key,
jobs.row_number,
CASE WHEN c.job_id IS NULL THEN jobs.name ELSE c.name END AS name,
CASE WHEN c.job_id IS NULL THEN jobs.prompt ELSE c.prompt END AS prompt,
CASE WHEN c.job_id IS NULL THEN jobs.provider ELSE c.provider END AS provider,
CASE WHEN c.job_id IS NULL THEN jobs.params ELSE c.params END AS params,
CASE WHEN c.job_id IS NULL THEN jobs.pinned_account ELSE c.pinned_account END AS pinned_account,
jobs.priority,
CASE WHEN c.job_id IS NULL THEN jobs.output_path ELSE c.output_path END AS output_path,
jobs.state,
jobs.attempts,
jobs.max_attempts,
CASE WHEN length(jobs.account) > {list_name_chars} THEN substr(jobs.account, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.account AS BLOB)) || ' bytes]' ELSE jobs.account END AS account,
CASE WHEN length(jobs.claim_token) > {list_name_chars} THEN substr(jobs.claim_token, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.claim_token AS BLOB)) || ' bytes]' ELSE jobs.claim_token END AS claim_token,
CASE WHEN length(jobs.lease_owner) > {list_name_chars} THEN substr(jobs.lease_owner, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.lease_owner AS BLOB)) || ' bytes]' ELSE jobs.lease_owner END AS lease_owner,
jobs.lease_until,
CASE WHEN length(jobs.client_token) > {list_name_chars} THEN substr(jobs.client_token, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.client_token AS BLOB)) || ' bytes]' ELSE jobs.client_token END AS client_token,
CASE WHEN length(jobs.provider_job_id) > {list_name_chars} THEN substr(jobs.provider_job_id, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.provider_job_id AS BLOB)) || ' bytes]' ELSE jobs.provider_job_id END AS provider_job_id,
CASE WHEN length(jobs.sub_status) > {list_name_chars} THEN substr(jobs.sub_status, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.sub_status AS BLOB)) || ' bytes]' ELSE jobs.sub_status END AS sub_status,
jobs.progress,
jobs.run_after,
jobs.output_size,
CASE WHEN length(jobs.output_sha256) > {list_name_chars} THEN substr(jobs.output_sha256, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.output_sha256 AS BLOB)) || ' bytes]' ELSE jobs.output_sha256 END AS output_sha256,
jobs.cost,
jobs.error_class,
CASE WHEN length(jobs.error_label) > {list_name_chars} THEN substr(jobs.error_label, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.error_label AS BLOB)) || ' bytes]' ELSE jobs.error_label END AS error_label,
CASE WHEN c.job_id IS NULL THEN jobs.error_message ELSE c.error_message END AS error_message,
jobs.created_at,
jobs.updated_at,
jobs.started_at,
jobs.finished_at,
CASE WHEN c.job_id IS NULL THEN jobs.metadata ELSE c.metadata END AS metadata,
CASE WHEN length(jobs.output_host) > {list_name_chars} THEN substr(jobs.output_host, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(jobs.output_host AS BLOB)) || ' bytes]' ELSE jobs.output_host END AS output_host,
CASE WHEN length(jobs.output_part) > {list_path_chars} THEN substr(jobs.output_part, 1, {list_path_chars}) || '… [cut: '
            || length(CAST(jobs.output_part AS BLOB)) || ' bytes]' ELSE jobs.output_part END AS output_part,
CASE WHEN c.job_id IS NULL THEN jobs.route ELSE c.route END AS route,
-- the review (issue 35): decided_by is bounded by its CHECK
jobs.decision, jobs.rating, jobs.decided_at, jobs.decided_by, jobs.decision_version

-- A listing's batch columns (the same policy; list_batches).
-- name: listed_batch_columns
id,
CASE WHEN length(name) > {list_name_chars} THEN substr(name, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(name AS BLOB)) || ' bytes]' ELSE name END AS name,
CASE WHEN length(source_path) > {list_path_chars} THEN substr(source_path, 1, {list_path_chars})
            || '… [cut: ' || length(CAST(source_path AS BLOB)) || ' bytes]' ELSE source_path END AS source_path,
CASE WHEN length(output_dir) > {list_path_chars} THEN '' ELSE output_dir END AS output_dir,
max_attempts,
CASE WHEN json_valid(settings) = 0 THEN json_object('cut', 'not valid JSON')
     WHEN length(CAST(settings AS BLOB)) > {list_settings_bytes}
       THEN json_patch(json_object('cut', length(CAST(settings AS BLOB)) || ' bytes'),
                       json_object('paused', json_extract(settings, '$.paused'),
                                   'max_spend', json_extract(settings, '$.max_spend')))
     ELSE settings END AS settings,
created_at

-- A listing's ledger columns (the same policy).
-- name: listed_ledger_columns
seq, at,
CASE WHEN length(event) > {list_name_chars} THEN substr(event, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(event AS BLOB)) || ' bytes]' ELSE event END AS event,
job_id,
CASE WHEN length(account) > {list_name_chars} THEN substr(account, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(account AS BLOB)) || ' bytes]' ELSE account END AS account,
CASE WHEN length(claim_token) > {list_name_chars} THEN substr(claim_token, 1, {list_name_chars}) || '… [cut: '
            || length(CAST(claim_token AS BLOB)) || ' bytes]' ELSE claim_token END AS claim_token,
CASE WHEN length(CAST(detail AS BLOB)) > {list_json_bytes}
       THEN json_object('cut', length(CAST(detail AS BLOB)) || ' bytes')
     WHEN json_valid(detail) = 0 THEN json_object('cut', 'not valid JSON')
     ELSE detail END AS detail

-- list_jobs: one statement per filter, so each is planned with its own index (a batch's
-- jobs by jobs_by_batch). :states is a JSON list; :limit -1 is no limit.
-- name: list_jobs
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id ORDER BY id LIMIT :limit OFFSET :offset;

-- name: list_jobs_of_batch
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id WHERE batch_id = :batch_id
 ORDER BY id LIMIT :limit OFFSET :offset;

-- name: list_jobs_in_states
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id WHERE state IN (SELECT value FROM json_each(:states))
 ORDER BY id LIMIT :limit OFFSET :offset;

-- name: list_jobs_of_batch_in_states
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id
 WHERE batch_id = :batch_id AND state IN (SELECT value FROM json_each(:states))
 ORDER BY id LIMIT :limit OFFSET :offset;

-- The HTTP API's reads (journal_reader.py), on their own read-only connection.
-- name: reader_job_by_key
SELECT * FROM jobs WHERE job_key = :job_key;

-- name: reader_jobs_after
-- Keyset pagination by id; :any_state true reads every state, else those of :states.
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id
 WHERE id > :after_id
   AND (:any_state OR state IN (SELECT value FROM json_each(:states)))
 ORDER BY id LIMIT :limit;

-- name: reader_jobs_after_of_batch
SELECT {listed_job_columns}
  FROM jobs LEFT JOIN job_cuts c ON c.job_id = jobs.id
 WHERE batch_id = :batch_id AND id > :after_id
   AND (:any_state OR state IN (SELECT value FROM json_each(:states)))
 ORDER BY id LIMIT :limit;

-- name: reader_ledger_after
SELECT {listed_ledger_columns} FROM ledger
 WHERE seq > :seq AND (job_id IS NOT NULL OR account IS NOT NULL)
 ORDER BY seq LIMIT :limit;

-- name: reader_last_ledger_seq
SELECT COALESCE(MAX(seq), 0) FROM ledger;

-- The HTTP API's tokens (tokens.py; schema 5).
-- name: token_insert
INSERT INTO api_tokens (name, token_id, salt, digest, scope, created_at)
VALUES (:name, :token_id, :salt, :digest, :scope, :now);

-- name: token_delete
DELETE FROM api_tokens WHERE name = :name;

-- name: token_list
SELECT name, scope, created_at FROM api_tokens ORDER BY name;

-- name: token_by_id
SELECT name, salt, digest, scope, created_at FROM api_tokens WHERE token_id = :token_id;

-- reelqueue migrate-to reads the local journal row for row ({table}: one of
-- migrate.TABLES, never text from outside).
-- name: migrate_source_rows
SELECT * FROM {table} ORDER BY rowid;

-- Rows are untrusted input (issue 21; domain/row_limits.py): a job row is checked before
-- it is claimed, in SQL, so an oversized value is never fetched and a JSON document nested
-- too deep is never parsed in Python. The bounds come from ROW_LIMITS; the depth (16) is
-- MAX_JSON_DEPTH (jsonb paths take no parameter there; tests/store/test_row_limits.py
-- checks 15 passes and 16 is refused).
-- name: row_problem_expr
CASE
  WHEN json_valid(jj.params) = 0 THEN 'its parameters are not valid JSON'
  WHEN json_type(jj.params) <> 'object' THEN 'its parameters are not a JSON object'
  WHEN length(CAST(jj.prompt AS BLOB)) > :max_prompt_bytes
    THEN printf('its prompt is %d bytes (at most %d)', length(CAST(jj.prompt AS BLOB)),
                :max_prompt_bytes)
  WHEN length(CAST(jj.params AS BLOB)) > :max_params_bytes
    THEN printf('its parameters are %d bytes (at most %d)', length(CAST(jj.params AS BLOB)),
                :max_params_bytes)
  WHEN EXISTS (SELECT 1 FROM json_tree(jj.params) AS t
                WHERE length(t.fullkey)
                      - length(replace(replace(t.fullkey, '.', ''), '[', '')) >= 16)
    THEN 'its parameters are nested 16 levels deep or more'
  WHEN length(CAST(jj.name AS BLOB)) > :max_name_bytes
    THEN printf('its name is %d bytes (at most %d)', length(CAST(jj.name AS BLOB)),
                :max_name_bytes)
  WHEN length(CAST(jj.output_path AS BLOB)) > :max_path_bytes
    THEN printf('its output path is %d bytes (at most %d)',
                length(CAST(jj.output_path AS BLOB)), :max_path_bytes)
  WHEN length(CAST(jj.job_key AS BLOB)) > :max_key_bytes
    THEN printf('its job key is %d bytes (at most %d)', length(CAST(jj.job_key AS BLOB)),
                :max_key_bytes)
  WHEN length(CAST(jj.route AS BLOB)) > :max_route_bytes
    THEN printf('its route is %d bytes (at most %d)', length(CAST(jj.route AS BLOB)),
                :max_route_bytes)
END

-- name: row_problem
SELECT {row_problem} AS problem FROM jobs AS jj WHERE jj.id = :id;

-- name: refuse_row
-- The row keeps the start of its prompt and none of its parameters nor its route (no later
-- read fetches the oversized value); its key becomes its own, so importing the sheet's row
-- again adds it afresh.
UPDATE jobs SET state = 'FAILED', finished_at = :now, updated_at = :now,
       claim_token = NULL, lease_owner = NULL, lease_until = NULL,
       prompt = substr(prompt, 1, :kept_prompt_chars), params = '{}',
       name = substr(name, 1, 200), output_path = substr(output_path, 1, 1024),
       job_key = 'row-refused:' || id, route = NULL, route_order = NULL,
       error_class = 'permanent', error_label = 'invalid input', error_message = :message
 WHERE id = :id AND state IN ('QUEUED', 'RETRY_WAIT');

-- Review (issue 35 item 2, domain/review.py) -------------------------------------------
-- name: set_review
-- A reviewer's change, written only if the row still has the version the reviewer saw
-- (compare-and-set) and the take did not fail and was not cancelled.
UPDATE jobs SET decision = :decision, rating = :rating, decided_at = :now,
       decided_by = :by, decision_version = decision_version + 1
 WHERE id = :id AND decision_version = :seen
   AND state <> 'FAILED' AND state <> 'CANCELLED'
 RETURNING *;

-- name: family_picks
-- The picked takes of a batch and its re-rolls (batches whose settings name it in
-- reroll_of) but :id: one pick per take group (the caller compares the groups).
SELECT id, job_key, rating, decision_version FROM jobs
 WHERE decision = 'pick' AND id <> :id
   AND (batch_id = :root OR batch_id IN (
        SELECT b.id FROM batches b WHERE json_extract(b.settings, '$.reroll_of') = :root));

-- name: move_pick
-- A pick moved to another take of its group: this one is left undecided (its rating kept).
UPDATE jobs SET decision = 'none', decided_at = :now, decided_by = :by,
       decision_version = decision_version + 1
 WHERE id = :id AND decision = 'pick'
 RETURNING decision_version;
