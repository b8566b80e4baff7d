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
-- Only trajectories with outcome success or failure take part. A call of a program the shell did not
-- find (`whisper: command not found`, numbered tool_seq = 0 by ingest) is no use of the tool: not
-- counted. These are point estimates; `trajlab gaps` (Python: trajlab.analysis.gaps) adds bootstrap
-- intervals over trajectories and corrected tests.
-- The calls come from the tool-use relation (below): rows whose sums give, per trajectory and tool, the
-- calls and whether the tool was used. That is the materialized `tool_usage` table when it is current
-- for the lab's steps (trajlab.analysis.refresh_tool_usage builds it; `trajlab gaps` does on big labs),
-- else the tool calls of `steps`, one row per call, a first use marked by `tool_seq = 1` (counts="steps"
-- forces that). All sources give the same table. Aggregating per (group, tool, outcome) first keeps the
-- pivot to the few rows that come out of it.
--
-- @param min_support=10 minimum number of calls of the tool (both outcomes together)
-- @param min_trajectories=5 minimum number of trajectories that use the tool
-- {{by}} grouping columns followed by a comma (`model, harness,`), or nothing
-- {{tool_use}} the calls (n_calls) and first uses (n_users) per trajectory under the tool key (`tool` by
--   default; also `tool_modality` = tool plus modality, `python:video`, or `program` = every program of a
--   command line)
-- {{partition_by}} `PARTITION BY` the grouping columns, or nothing
WITH traj AS (
    SELECT trajectory_id, outcome = 'success' AS success, {{by}}
    FROM trajectories
    WHERE outcome IN ('success', 'failure')
),
calls AS (
    SELECT trajectory_id, tool, n_calls, n_users FROM {{tool_use}}
),
by_outcome AS (
    -- per group, outcome and tool: its calls and the trajectories that use it ...
    SELECT t.* EXCLUDE (trajectory_id), c.tool, sum(c.n_calls) AS n_calls, sum(c.n_users) AS n_users
    FROM calls c JOIN traj t USING (trajectory_id)
    GROUP BY ALL
    UNION ALL BY NAME
    -- ... plus per group and outcome, with tool NULL, its number of trajectories (also those without
    -- any tool call)
    SELECT t.* EXCLUDE (trajectory_id), NULL AS tool, 0 AS n_calls, count(*) AS n_users
    FROM traj t
    GROUP BY ALL
),
counts AS (
    SELECT {{by}} tool,
        coalesce(sum(n_calls) FILTER (WHERE success), 0)::BIGINT AS calls_success,
        coalesce(sum(n_calls) FILTER (WHERE NOT success), 0)::BIGINT AS calls_failure,
        coalesce(sum(n_users) FILTER (WHERE success), 0)::BIGINT AS traj_success,
        coalesce(sum(n_users) FILTER (WHERE NOT success), 0)::BIGINT AS traj_failure
    FROM by_outcome
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
