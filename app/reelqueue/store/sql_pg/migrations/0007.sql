-- Version 7 (issue 21): the HTTP API's client tokens live in the team database, so a
-- token made on one machine works on every machine's API and its revoke is seen by all of
-- them at their next request (store/pg_tokens.py). A salted sha256 only; token_id is the
-- token's public part. The same table as the SQLite journal's (schema 5 there).
CREATE TABLE api_tokens (
    name        TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL UNIQUE,
    salt        BYTEA NOT NULL,
    digest      BYTEA NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'submit', 'admin')),
    created_at  DOUBLE PRECISION NOT NULL
);
