-- Version 8 (issue 22): a file at a job's output name that the journal did not record is
-- the user's, never replaced. A download's DOWNLOADING write names the temporary file it
-- writes (output_part, a name beside output_path) and the output path it chose (a
-- suffixed name, "clip (2).mp4", when the planned one is taken); its sha256 is recorded
-- before the file is renamed into place (record_download), so recovery completes a job
-- only from a file whose hash the journal holds. NULL for downloads before this version.
ALTER TABLE jobs ADD COLUMN output_part TEXT;
