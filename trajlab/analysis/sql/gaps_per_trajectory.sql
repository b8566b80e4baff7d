-- @title Tool calls per trajectory and tool, for trajectories with a known outcome (input of `trajlab gaps`)
-- @kind analysis
--
-- One row per (trajectory, tool it called) with its number of calls, plus one row with `tool` NULL and
-- `n_calls` 0 for every trajectory that made no tool call at all, so that it still counts in the
-- denominators. Only trajectories whose outcome is `success` or `failure` take part. `trajlab gaps`
-- computes shares, usage rates, bootstrap intervals and tests from this table (see gaps.sql for the
-- same point estimates in plain SQL).
--
-- {{by}} is replaced by the grouping columns followed by a comma (`model, harness,`), or nothing.
-- {{key}} what names a call's tool: by default coalesce(tool, tool_name, '(unknown)'); trajlab can
--   also use the tool plus its modality (`python:video`) or every distinct program of the command line
WITH traj AS (
    SELECT trajectory_id, outcome = 'success' AS success, {{by}}
    FROM trajectories
    WHERE outcome IN ('success', 'failure')
),
calls AS (
    -- aggregate the big steps table first, then join the small trajectories table
    SELECT trajectory_id, tool, count(*) AS n_calls
    FROM (SELECT trajectory_id, {{key}} AS tool FROM steps WHERE kind = 'tool_call')
    GROUP BY ALL
)
SELECT t.trajectory_id, t.success, {{by}} c.tool, coalesce(c.n_calls, 0) AS n_calls
FROM traj t LEFT JOIN calls c USING (trajectory_id)
