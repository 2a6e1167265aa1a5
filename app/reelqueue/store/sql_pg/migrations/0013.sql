-- Version 13 (issue 36 item 2): which machine has which provider. Each instance writes, when
-- it says hello, the provider kinds it can build (built-ins and loaded plug-ins) as a JSON
-- list of names; a machine without a job's provider never claims it, and `instances` says
-- which machine has which. NULL: a version before schema 13, or a list it could not bound.
-- Readers bound it again (store/pg_instances.py): anything else reads "unknown".
ALTER TABLE instances ADD COLUMN providers TEXT
    CONSTRAINT instances_providers_bounded CHECK (length(providers) <= 8192);
