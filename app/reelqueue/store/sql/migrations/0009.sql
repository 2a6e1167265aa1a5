-- Version 9 (issues 21, 23): every machine writes under its own videos folder. The journal
-- keeps a batch's folder as a name relative to the videos folder, and each job's file as
-- '<batch folder>/<file>'; each machine resolves them under its own --videos-dir. Paths of
-- earlier versions were absolute (the importing machine's):
--   * a batch's absolute folder becomes its last component (its name);
--   * a job's absolute path inside its batch's folder becomes relative to the videos
--     folder ('<batch folder name>/<rest>');
--   * a job's absolute path outside its batch's folder is kept as it is: not trusted,
--     never written to (engine/outputs.py, output_refusal: the job fails saying why).
-- Either separator ('\' on Windows) is read; the relative paths use '/'. No column changes.
CREATE TEMP TABLE v9_folders AS
    SELECT id, d, substr(d, length(rtrim(d, replace(d, '/', ''))) + 1) AS base
    FROM (SELECT id, rtrim(replace(output_dir, '\', '/'), '/') AS d FROM batches)
    WHERE substr(d, 1, 1) = '/' OR substr(d, 2, 1) = ':';
UPDATE jobs
    SET output_path = (SELECT f.base || substr(replace(jobs.output_path, '\', '/'),
                                               length(f.d) + 1)
                       FROM v9_folders f WHERE f.id = jobs.batch_id)
    WHERE EXISTS (SELECT 1 FROM v9_folders f
                  WHERE f.id = jobs.batch_id AND f.base <> ''
                    AND substr(replace(jobs.output_path, '\', '/'), 1, length(f.d) + 1)
                        = f.d || '/');
UPDATE batches
    SET output_dir = (SELECT f.base FROM v9_folders f WHERE f.id = batches.id)
    WHERE id IN (SELECT id FROM v9_folders WHERE base <> '');
DROP TABLE v9_folders;
