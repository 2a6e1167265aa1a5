-- PostgreSQL statements of ``reelqueue migrate-to`` (application/migrate.py): copying a
-- local journal into an empty team database. They belong to that command, not to the
-- PostgreSQL store (whose SQL is in sql_pg/). {table} and {column} come from
-- migrate.TABLES / migrate.IDENTITY (fixed lists, never text from outside); {columns} are
-- the source table's own column names, each checked against the target's columns first.

-- name: table_used
SELECT EXISTS (SELECT 1 FROM {table}) AS used;

-- name: move_identity
-- The identity counter moved past the copied ids.
SELECT setval(pg_get_serial_sequence('{table}', '{column}'),
              COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false);

-- name: column_types
SELECT column_name, data_type FROM information_schema.columns
 WHERE table_schema = current_schema() AND table_name = %(table)s;

-- {values}: one %s per column.
-- name: copy_rows
INSERT INTO {table} ({columns}) VALUES ({values});

-- name: copy_rows_keeping_ids
-- A table with an identity column: its ids (and the ledger's sequence numbers) are kept.
INSERT INTO {table} ({columns}) OVERRIDING SYSTEM VALUE VALUES ({values});
