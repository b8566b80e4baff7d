-- @title Tool overview: calls, trajectories, errors and duration per tool
-- @kind analysis
--
-- One row per group and tool: n_calls, call_share (of all calls in the group), n_traj (trajectories using
-- it), error_rate (is_error or timed_out), mean and median duration_s, and calls in successful / failed
-- / unknown-outcome trajectories.
--
-- {{by}} grouping columns followed by a comma (`model,`), or nothing
-- {{partition_by}} `PARTITION BY` the grouping columns, or nothing
WITH calls AS (
    SELECT trajectory_id, coalesce(tool, tool_name, '(unknown)') AS tool, is_error OR timed_out AS failed,
        duration_s
    FROM steps
    WHERE kind = 'tool_call'
),
traj AS (
    SELECT trajectory_id, outcome, {{by}}
    FROM trajectories
)
SELECT {{by}}
    tool,
    count(*) AS n_calls,
    count(*) / sum(count(*)) OVER g AS call_share,
    count(DISTINCT trajectory_id) AS n_traj,
    avg(failed::INTEGER) AS error_rate,
    avg(duration_s) AS mean_duration_s,
    median(duration_s) AS median_duration_s,
    count(*) FILTER (WHERE outcome = 'success') AS calls_success,
    count(*) FILTER (WHERE outcome = 'failure') AS calls_failure,
    count(*) FILTER (WHERE outcome = 'unknown') AS calls_unknown
FROM calls JOIN traj USING (trajectory_id)
GROUP BY {{by}} tool
WINDOW g AS ({{partition_by}})
ORDER BY {{by}} n_calls DESC, tool
