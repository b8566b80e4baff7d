-- @title Step funnel: where in the trajectory the first tool error happens
-- @kind analysis
--
-- A tool error is a tool call flagged `is_error` or `timed_out`. The position of a trajectory's first
-- error is its step_index divided by the trajectory's number of steps (0 = first step, close to 1 = last),
-- cut into $bins equal bins. One row per group and bin:
--   pos_from, pos_to        the bin's range of relative positions
--   first_errors            trajectories whose first error falls in this bin
--   first_errors_success / first_errors_failure   the same, by outcome
--   share_of_errored        first_errors / trajectories with any error
--   cum_share               share of all trajectories whose first error is in this bin or an earlier one
--   n_traj, n_errored       trajectories in the group, and those with at least one error
--
-- @param bins=10 number of position bins
-- {{by}} grouping columns followed by a comma (`model,`), or nothing
WITH traj AS (
    SELECT trajectory_id, outcome, {{by}}
    FROM trajectories
),
per_step AS (
    SELECT trajectory_id,
        count(*) AS n_steps,
        min(step_index) FILTER (WHERE kind = 'tool_call' AND (is_error OR timed_out)) AS first_error,
        max(step_index) AS last_step
    FROM steps
    GROUP BY ALL
),
per_trajectory AS (
    SELECT t.*,
        CASE WHEN s.first_error IS NOT NULL THEN  -- (least() would skip a NULL)
            least(floor(s.first_error / greatest(s.n_steps, s.last_step + 1) * $bins), $bins - 1)::INTEGER
        END AS first_error_bin
    FROM traj t LEFT JOIN per_step s USING (trajectory_id)
)
SELECT {{by}}
    b.bin,
    b.bin / $bins AS pos_from,
    (b.bin + 1) / $bins AS pos_to,
    count(*) FILTER (WHERE first_error_bin = b.bin) AS first_errors,
    count(*) FILTER (WHERE first_error_bin = b.bin AND outcome = 'success') AS first_errors_success,
    count(*) FILTER (WHERE first_error_bin = b.bin AND outcome = 'failure') AS first_errors_failure,
    first_errors / nullif(count(first_error_bin), 0) AS share_of_errored,
    count(*) FILTER (WHERE first_error_bin <= b.bin) / count(*) AS cum_share,
    count(*) AS n_traj,
    count(first_error_bin) AS n_errored
FROM per_trajectory CROSS JOIN (SELECT range::INTEGER AS bin FROM range($bins::INTEGER)) b
GROUP BY ALL
ORDER BY ALL
