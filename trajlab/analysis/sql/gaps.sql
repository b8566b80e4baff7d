-- @title Tool gaps: share of calls in successful vs failed trajectories, and per-trajectory usage
-- @kind analysis
--
-- For every tool (per group when grouped):
--   share_success  calls of the tool in successful trajectories / all calls in successful trajectories
--   share_failure  the same over failed trajectories
--   gap            share_success - share_failure (positive: over-represented in successes)
--   usage_success  share of successful trajectories that call the tool at least once
--   usage_failure  the same over failed trajectories (trajectories without any call count too)
--   usage_gap      usage_success - usage_failure
--   supported      the tool has at least $min_support calls and is used in at least $min_trajectories
--                  trajectories; unsupported rows are kept but must not be read as findings
-- Only trajectories with outcome success or failure take part. These are point estimates; `trajlab gaps`
-- (Python: trajlab.analysis.gaps) adds bootstrap intervals over trajectories and corrected tests.
-- The calls per (trajectory, tool) come from {{tool_counts}}: the materialized `tool_usage` table when
-- it is current for the lab's steps (trajlab.analysis.refresh_tool_usage builds it; `trajlab gaps` does
-- on big labs), else a GROUP BY over the tool calls of `steps` (counts="steps" forces that). Counting
-- calls per trajectory and tool is most of a gap query's cost; both sources give the same table.
--
-- @param min_support=10 minimum number of calls of the tool (both outcomes together)
-- @param min_trajectories=5 minimum number of trajectories that use the tool
-- {{by}} grouping columns followed by a comma (`model, harness,`), or nothing
-- {{tool_counts}} the calls per (trajectory, tool) under the tool key (`tool` by default; also
--   `tool_modality` = tool plus modality, `python:video`, or `program` = every program of a command line)
-- {{partition_by}} `PARTITION BY` the grouping columns, or nothing
WITH traj AS (
    SELECT trajectory_id, outcome = 'success' AS success, {{by}}
    FROM trajectories
    WHERE outcome IN ('success', 'failure')
),
calls AS (
    SELECT trajectory_id, tool, n_calls FROM {{tool_counts}}
),
per_trajectory AS (
    -- one row per (trajectory, tool it used) ...
    SELECT t.*, c.tool, c.n_calls
    FROM calls c JOIN traj t USING (trajectory_id)
    UNION ALL BY NAME
    -- ... plus one row per trajectory with tool NULL and no calls, so that every trajectory (also one
    -- without any tool call) counts in its group's number of trajectories
    SELECT t.*, NULL AS tool, 0 AS n_calls
    FROM traj t
),
counts AS (
    SELECT {{by}} tool,
        coalesce(sum(n_calls) FILTER (WHERE success), 0)::BIGINT AS calls_success,
        coalesce(sum(n_calls) FILTER (WHERE NOT success), 0)::BIGINT AS calls_failure,
        count(*) FILTER (WHERE success) AS traj_success,
        count(*) FILTER (WHERE NOT success) AS traj_failure
    FROM per_trajectory
    GROUP BY ALL
),
with_totals AS (
    -- the group's calls are the sum over its tools; its trajectories are counted by the tool-NULL row
    SELECT *,
        sum(calls_success) OVER g AS total_calls_success,
        sum(calls_failure) OVER g AS total_calls_failure,
        max(CASE WHEN tool IS NULL THEN traj_success END) OVER g AS n_traj_success,
        max(CASE WHEN tool IS NULL THEN traj_failure END) OVER g AS n_traj_failure
    FROM counts
    WINDOW g AS ({{partition_by}})
)
SELECT {{by}}
    tool,
    calls_success + calls_failure AS n_calls,
    calls_success,
    calls_failure,
    n_traj_success,
    n_traj_failure,
    traj_success AS traj_using_success,
    traj_failure AS traj_using_failure,
    calls_success / nullif(total_calls_success, 0) AS share_success,
    calls_failure / nullif(total_calls_failure, 0) AS share_failure,
    share_success - share_failure AS gap,
    traj_success / nullif(n_traj_success, 0) AS usage_success,
    traj_failure / nullif(n_traj_failure, 0) AS usage_failure,
    usage_success - usage_failure AS usage_gap,
    calls_success + calls_failure >= $min_support
        AND traj_success + traj_failure >= $min_trajectories AS supported
FROM with_totals
WHERE tool IS NOT NULL
ORDER BY {{by}} gap DESC NULLS LAST, tool
