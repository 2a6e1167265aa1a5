-- Version 5: tokens of the HTTP API (issue 14). Only a salted sha256 of each token is kept;
-- token_id is the public part of the token ("rq_<token_id>_<secret>"), so a request finds
-- its row by an index instead of hashing against every row.
CREATE TABLE api_tokens (
    name        TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL UNIQUE,
    salt        BLOB NOT NULL,
    digest      BLOB NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'submit', 'admin')),
    created_at  REAL NOT NULL
);
