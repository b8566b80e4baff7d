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
-- {{tool_counts}} the calls per (trajectory, tool) under the chosen tool key (columns trajectory_id,
--   tool, n_calls): the materialized `tool_usage` table when it is current for the lab's steps, else
--   the same GROUP BY over the tool-call rows of `steps` (see docs/analysis.md, "tool_usage")
WITH traj AS (
    SELECT trajectory_id, outcome = 'success' AS success, {{by}}
    FROM trajectories
    WHERE outcome IN ('success', 'failure')
),
calls AS (
    -- the big steps table is aggregated (or read aggregated) first, then joined to trajectories
    SELECT trajectory_id, tool, n_calls FROM {{tool_counts}}
)
SELECT t.trajectory_id, t.success, {{by}} c.tool, coalesce(c.n_calls, 0) AS n_calls
FROM traj t LEFT JOIN calls c USING (trajectory_id)
