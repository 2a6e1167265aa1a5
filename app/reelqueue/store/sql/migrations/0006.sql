-- Version 6: the machine that holds each finished file (issue 15). On a team store every
-- instance writes under its own videos folder, so a completion records the host name of
-- the instance that wrote the file (mark_completed, recover_complete); status and the
-- window say where a video is. NULL for jobs completed before this version.
ALTER TABLE jobs ADD COLUMN output_host TEXT;
