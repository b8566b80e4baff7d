-- @title Error recovery per tool: is a failed call followed by a later successful call?
-- @kind analysis
--
-- A failed call is a tool call flagged `is_error` or `timed_out`. It is recovered when a later call in the
-- same trajectory succeeds with the same tool (recovered_same_tool) or with the very same command line
-- (recovered_same_command; only calls that have a command line count). One row per group and tool with
-- at least one error:
--   n_calls, n_errors, error_rate
--   recovery_rate            recovered_same_tool / n_errors
--   same_command_rate        recovered_same_command / errors that have a command line
--   median_steps_to_recovery steps between the error and the next successful call of the same tool
--   traj_with_errors         trajectories with at least one error of this tool
--
-- {{by}} grouping columns followed by a comma (`model,`), or nothing
WITH calls AS (
    SELECT trajectory_id, step_index, coalesce(tool, tool_name, '(unknown)') AS tool, command,
        is_error OR timed_out AS failed
    FROM steps
    WHERE kind = 'tool_call'
),
marked AS (
    SELECT *,
        min(step_index) FILTER (WHERE NOT failed) OVER (
            PARTITION BY trajectory_id, tool ORDER BY step_index
            ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next_ok_tool,
        min(step_index) FILTER (WHERE NOT failed) OVER (
            PARTITION BY trajectory_id, command ORDER BY step_index
            ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next_ok_command
    FROM calls
),
traj AS (
    SELECT trajectory_id, {{by}}
    FROM trajectories
)
SELECT {{by}}
    tool,
    count(*) AS n_calls,
    count(*) FILTER (WHERE failed) AS n_errors,
    n_errors / n_calls AS error_rate,
    count(*) FILTER (WHERE failed AND next_ok_tool IS NOT NULL) AS recovered_same_tool,
    recovered_same_tool / n_errors AS recovery_rate,
    count(*) FILTER (WHERE failed AND command IS NOT NULL AND next_ok_command IS NOT NULL)
        AS recovered_same_command,
    recovered_same_command / nullif(count(*) FILTER (WHERE failed AND command IS NOT NULL), 0)
        AS same_command_rate,
    median(next_ok_tool - step_index) FILTER (WHERE failed) AS median_steps_to_recovery,
    count(DISTINCT trajectory_id) FILTER (WHERE failed) AS traj_with_errors
FROM marked JOIN traj USING (trajectory_id)
GROUP BY ALL
HAVING count(*) FILTER (WHERE failed) > 0
ORDER BY {{by}} n_errors DESC, tool
