-- @title Meta-capability usage (external resource access, file management, computation) per group
-- @kind analysis
-- @by model
--
-- Tool calls are classified by the rules of the `step_capability` view (step_capability.sql). One row per
-- group and capability (external, file, compute, other):
--   n_traj          trajectories in the group (also those without any tool call)
--   avg_turns       average number of tool calls (turns) per trajectory
--   n_calls         calls of this capability
--   call_share      n_calls / all tool calls of the group
--   usage_rate      share of the group's trajectories with at least one call of this capability
--   calls_per_traj  average calls of this capability per trajectory
--   traj_share_when_used  among trajectories that use it, the average share of their calls it takes
--
-- {{by}} grouping columns followed by a comma (`model, domain,`), or nothing
WITH traj AS (
    SELECT trajectory_id, {{by}}
    FROM trajectories
),
per_trajectory AS (
    SELECT trajectory_id,
        count(*) AS n_total,
        count(*) FILTER (WHERE capability = 'external') AS n_external,
        count(*) FILTER (WHERE capability = 'file') AS n_file,
        count(*) FILTER (WHERE capability = 'compute') AS n_compute,
        count(*) FILTER (WHERE capability = 'other') AS n_other
    FROM step_capability
    GROUP BY ALL
),
joined AS (
    SELECT t.*,
        coalesce(p.n_total, 0) AS n_total,
        coalesce(p.n_external, 0) AS n_external,
        coalesce(p.n_file, 0) AS n_file,
        coalesce(p.n_compute, 0) AS n_compute,
        coalesce(p.n_other, 0) AS n_other
    FROM traj t LEFT JOIN per_trajectory p USING (trajectory_id)
),
long AS (
    -- one row per trajectory and capability
    SELECT j.* EXCLUDE (n_external, n_file, n_compute, n_other),
        c.capability,
        c.ord,
        CASE c.capability
            WHEN 'external' THEN n_external
            WHEN 'file' THEN n_file
            WHEN 'compute' THEN n_compute
            ELSE n_other
        END AS n
    FROM joined j
    CROSS JOIN (VALUES ('external', 1), ('file', 2), ('compute', 3), ('other', 4)) c(capability, ord)
)
SELECT {{by}}
    capability,
    count(*) AS n_traj,
    avg(n_total) AS avg_turns,
    sum(n)::BIGINT AS n_calls,
    sum(n) / nullif(sum(n_total), 0) AS call_share,
    avg((n > 0)::INTEGER) AS usage_rate,
    avg(n) AS calls_per_traj,
    avg(n / n_total) FILTER (WHERE n > 0) AS traj_share_when_used
FROM long
GROUP BY ALL
ORDER BY {{by}} min(ord)
