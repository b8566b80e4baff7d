-- @title Raw media vs tool orchestration: how runs consumed their media, and what it cost in tokens
-- @kind analysis
-- @by domain
--
-- Each trajectory is classified by how it got at audio, video and image content:
--   raw    it fed media to the model itself (a raw read: image_read / view_image, or a file read whose
--          modality is audio, video or image) and ran no extraction tool on media
--   tools  it ran extraction tools on media (ffprobe, ffmpeg, whisper, tesseract, python on media...)
--          and fed no media to the model
--   mixed  both;  none  neither (no media call at all)
-- Media in the task prompt itself (attachments) is not a call and is not counted. Per group and
-- strategy:
--   n_traj, n_with_tokens        trajectories, and those that record prompt tokens
--   avg_raw_reads, avg_extractions   media calls of each kind per trajectory
--   accuracy                     successes / trajectories with a known outcome (NULL when none)
--   prompt_tokens, total_tokens  mean per trajectory (over trajectories that record them)
--   prompt_per_call              prompt tokens per model call: the step-level prompt tokens over the
--                                model calls that record them (each counted once per call), so the
--                                context size independent of how many turns a run took
--   prompt_per_call_vs_tools     prompt_per_call / that of the `tools` runs of the same group (NULL
--                                when the group has none): above 1 means feeding media cost more context
--   tokens_per_solved            all tokens of the strategy's runs with token counts and a known outcome /
--                                their successes (runs of unknown outcome are neither)
--
-- @param raw_tools=image_read comma-separated tools that put media into the model's context
-- {{by}} grouping columns followed by a comma (`domain,`), or nothing
WITH params AS (
    -- spaces around the commas are not part of the names (`image_read, view_image`)
    SELECT regexp_split_to_array(trim($raw_tools), '\s*,\s*') AS raw_tools
),
media_calls AS (
    SELECT trajectory_id,
        count(*) FILTER (WHERE is_raw) AS n_raw,
        count(*) FILTER (WHERE NOT is_raw) AS n_extract
    FROM (
        SELECT trajectory_id,
            list_contains((SELECT raw_tools FROM params), tool) OR tool = 'read' AS is_raw
        FROM steps
        WHERE kind = 'tool_call' AND modality IN ('audio', 'video', 'image')
    )
    GROUP BY ALL
),
prompt_calls AS (
    SELECT trajectory_id, sum(input_tokens) AS step_prompt, count(input_tokens) AS n_model_calls
    FROM steps
    WHERE input_tokens IS NOT NULL
    GROUP BY ALL
),
traj AS (
    SELECT {{by}}
        t.outcome,
        t.input_tokens,
        coalesce(t.total_tokens, t.input_tokens + coalesce(t.output_tokens, 0), t.output_tokens) AS total,
        coalesce(m.n_raw, 0) AS n_raw,
        coalesce(m.n_extract, 0) AS n_extract,
        CASE
            WHEN coalesce(m.n_raw, 0) > 0 AND coalesce(m.n_extract, 0) > 0 THEN 'mixed'
            WHEN coalesce(m.n_raw, 0) > 0 THEN 'raw'
            WHEN coalesce(m.n_extract, 0) > 0 THEN 'tools'
            ELSE 'none'
        END AS strategy,
        p.step_prompt,
        p.n_model_calls
    FROM trajectories t
    LEFT JOIN media_calls m USING (trajectory_id)
    LEFT JOIN prompt_calls p USING (trajectory_id)
),
groups AS (
    SELECT {{by}}
        strategy,
        count(*) AS n_traj,
        count(input_tokens) AS n_with_tokens,
        avg(n_raw) AS avg_raw_reads,
        avg(n_extract) AS avg_extractions,
        count(*) FILTER (WHERE outcome = 'success')
            / nullif(count(*) FILTER (WHERE outcome IN ('success', 'failure')), 0) AS accuracy,
        avg(input_tokens) AS prompt_tokens,
        avg(total) AS total_tokens,
        sum(step_prompt) / nullif(sum(n_model_calls), 0) AS prompt_per_call,
        sum(total) FILTER (WHERE outcome IN ('success', 'failure'))
            / nullif(count(total) FILTER (WHERE outcome = 'success'), 0) AS tokens_per_solved
    FROM traj
    GROUP BY ALL
)
SELECT *,
    prompt_per_call / nullif(max(CASE WHEN strategy = 'tools' THEN prompt_per_call END) OVER g, 0)
        AS prompt_per_call_vs_tools
FROM groups
WINDOW g AS ({{partition_by}})
ORDER BY {{by}} list_position(['raw', 'mixed', 'tools', 'none'], strategy)
