-- Version 16 (issue 35 item 2, review): a take's decision is part of its job's row: pick,
-- reject or none, a rating 1-5, when and by whom, and a version that every change names
-- (compare-and-set: "changed by X meanwhile", never a silent overwrite). Each change is
-- also a ledger entry ("reviewed"). Jobs from before this version have no decision.
ALTER TABLE jobs ADD COLUMN decision TEXT NOT NULL DEFAULT 'none' CHECK (decision = 'none' OR decision = 'pick' OR decision = 'reject');
ALTER TABLE jobs ADD COLUMN rating INTEGER CHECK (rating >= 1 AND rating <= 5);
ALTER TABLE jobs ADD COLUMN decided_at REAL;
ALTER TABLE jobs ADD COLUMN decided_by TEXT CHECK (length(decided_by) <= 200);
ALTER TABLE jobs ADD COLUMN decision_version INTEGER NOT NULL DEFAULT 0 CHECK (decision_version >= 0);
