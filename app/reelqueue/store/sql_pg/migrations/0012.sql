-- Version 12 (issue 35 item 2, review): a take's decision is part of its job's row: pick,
-- reject or none, a rating 1-5, when and by whom, and a version that every change names
-- (compare-and-set: "changed by X meanwhile", never a silent overwrite). Each change is
-- also a ledger entry ("reviewed"). Jobs from before this version have no decision.
ALTER TABLE jobs ADD COLUMN decision TEXT NOT NULL DEFAULT 'none';
ALTER TABLE jobs ADD COLUMN rating INTEGER;
ALTER TABLE jobs ADD COLUMN decided_at DOUBLE PRECISION;
ALTER TABLE jobs ADD COLUMN decided_by TEXT;
ALTER TABLE jobs ADD COLUMN decision_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD CONSTRAINT jobs_decision_known
    CHECK (decision IN ('none', 'pick', 'reject'));
ALTER TABLE jobs ADD CONSTRAINT jobs_rating_range CHECK (rating BETWEEN 1 AND 5);
ALTER TABLE jobs ADD CONSTRAINT jobs_decided_by_bounded CHECK (length(decided_by) <= 200);
ALTER TABLE jobs ADD CONSTRAINT jobs_decision_version_counts CHECK (decision_version >= 0);
