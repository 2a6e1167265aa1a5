-- Version 2: the registry of instances sharing this database (issue 15): one row per
-- running ReelQueue (boot-unique id), with its host name, pid, version, start time, last
-- heartbeat and the renders it holds. renew_leases writes the heartbeat and the count.
CREATE TABLE instances (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL,
    live_renders INTEGER NOT NULL DEFAULT 0 CHECK (live_renders >= 0),
    stopped_at   DOUBLE PRECISION
);
