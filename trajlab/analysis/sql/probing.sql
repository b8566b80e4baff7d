-- @title Probing calls per trajectory (inspecting files and media before acting), per group
-- @kind analysis
-- @by reasoning_effort
--
-- A probing call inspects without producing anything: media probes (ffprobe, mediainfo, soxi,
-- identify, exiftool), file inspection (file, stat, ls, tree, du, wc, head, tail) and read-only tools
-- (read, glob, grep, find, image_read). Edit the list below to change what counts. Per group:
--   n_traj            trajectories in the group
--   avg_calls         tool calls per trajectory
--   avg_probing       probing calls per trajectory
--   probing_share     probing calls / all tool calls
--   probe_first       share of trajectories (with a tool call) whose first call is a probe
--   accuracy          successes / trajectories with a known outcome (NULL when none is known)
--
-- @param probes=ffprobe,mediainfo,soxi,identify,imagemagick,exiftool,file,stat,ls,tree,du,wc,head,tail,read,glob,grep,find,image_read comma-separated tools that count as probing
-- {{by}} grouping columns followed by a comma (`reasoning_effort,`), or nothing
WITH probes AS (
    -- spaces around the commas are not part of the names (`ffprobe, ls`)
    SELECT regexp_split_to_array(trim($probes), '\s*,\s*') AS tools
),
calls AS (
    SELECT trajectory_id,
        count(*) AS n_calls,
        count(*) FILTER (WHERE list_contains((SELECT tools FROM probes), tool)) AS n_probing,
        arg_min(list_contains((SELECT tools FROM probes), tool), step_index) AS first_is_probe
    FROM steps
    WHERE kind = 'tool_call'
    GROUP BY ALL
),
traj AS (
    SELECT trajectory_id, outcome, {{by}}
    FROM trajectories
)
SELECT {{by}}
    count(*) AS n_traj,
    avg(coalesce(n_calls, 0)) AS avg_calls,
    avg(coalesce(n_probing, 0)) AS avg_probing,
    sum(n_probing) / nullif(sum(n_calls), 0) AS probing_share,
    avg(first_is_probe::INTEGER) AS probe_first,
    count(*) FILTER (WHERE outcome = 'success')
        / nullif(count(*) FILTER (WHERE outcome IN ('success', 'failure')), 0) AS accuracy
FROM traj LEFT JOIN calls USING (trajectory_id)
GROUP BY ALL
ORDER BY ALL
