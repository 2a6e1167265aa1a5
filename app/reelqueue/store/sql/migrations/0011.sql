-- Version 11 (issue 20, the journal's speed): the index jobs_in_flight goes. No statement
-- of the journal is planned with it: the reads of in-flight jobs (recovery, the doctor) name
-- four states and the index's condition five, so SQLite cannot prove that it covers them,
-- and EXPLAIN QUERY PLAN of every named query is the same without it
-- (tests/store/test_index_use.py). Yet every state change of a job in flight rewrote its
-- entry and evaluated its five-state condition for the old and the new row: 12 % of the
-- instructions of a job's life and one to two pages of the write-ahead log per transition
-- (docs/benchmarks.md, issue 20). No column changes.
DROP INDEX IF EXISTS jobs_in_flight;
