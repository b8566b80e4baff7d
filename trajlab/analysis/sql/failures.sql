-- @title Failure category distribution per group, from judge, human, gold or predicted labels
-- @kind analysis
-- @by model, benchmark
--
-- One label per trajectory is taken from the chosen source:
--   judge      judge_labels with status `labeled`; the latest label of judge $judge, or when $judge is empty
--              the latest LLM label, falling back to the latest rules label
--   human      human_labels: each annotator's latest label, then the majority category of the trajectory
--              (a tie between categories counts as `unsure`)
--   gold       gold_labels (adjudicated), the latest per trajectory
--   predicted  predicted_labels (classifier), the latest per trajectory
-- Per group and category:
--   n              labeled trajectories with this category (0 rows are kept so groups line up)
--   share          n / all labeled trajectories of the group
--   failure_share  n / labeled trajectories whose category is a failure category (NULL for
--                  `not_a_failure` and `unsure`)
--   n_labeled, n_failed, coverage  labeled trajectories, failed trajectories, and the share of the failed
--                  trajectories that carry a label
--
-- @param source=judge judge | human | gold | predicted
-- @param judge= for source=judge: `llm` or `rules` (empty: LLM labels, else rules labels)
-- {{by}} grouping columns followed by a comma (`model, benchmark,`), or nothing
WITH judge AS (
    SELECT trajectory_id, category
    FROM judge_labels
    WHERE $source = 'judge' AND status = 'labeled' AND category IS NOT NULL
      AND (coalesce($judge, '') = '' OR judge = $judge)
    QUALIFY row_number() OVER (
        PARTITION BY trajectory_id ORDER BY judge = 'llm' DESC, created_at DESC, label_id) = 1
),
human_latest AS (
    SELECT trajectory_id, annotator, category
    FROM human_labels
    WHERE $source = 'human'
    QUALIFY row_number() OVER (
        PARTITION BY trajectory_id, annotator ORDER BY created_at DESC, source_line DESC) = 1
),
human_votes AS (
    SELECT trajectory_id, category, count(*) AS votes,
        max(count(*)) OVER (PARTITION BY trajectory_id) AS top
    FROM human_latest
    GROUP BY trajectory_id, category
),
human AS (
    SELECT trajectory_id,
        CASE WHEN count(*) > 1 THEN 'unsure' ELSE min(category) END AS category
    FROM human_votes
    WHERE votes = top
    GROUP BY trajectory_id
),
gold AS (
    SELECT trajectory_id, category
    FROM gold_labels
    WHERE $source = 'gold'
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY created_at DESC, category) = 1
),
predicted AS (
    SELECT trajectory_id, category
    FROM predicted_labels
    WHERE $source = 'predicted'
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY created_at DESC, category) = 1
),
labels AS (
    SELECT * FROM judge
    UNION ALL SELECT * FROM human
    UNION ALL SELECT * FROM gold
    UNION ALL SELECT * FROM predicted
),
categories AS (
    SELECT DISTINCT category FROM labels
),
traj AS (
    SELECT t.trajectory_id, t.outcome, {{by}} l.category AS label
    FROM trajectories t LEFT JOIN labels l USING (trajectory_id)
),
counts AS (
    -- every trajectory crossed with every category, so that zero counts are kept
    SELECT {{by}}
        c.category,
        count(*) FILTER (WHERE label = c.category) AS n,
        count(label) AS n_labeled,
        count(label) FILTER (WHERE label NOT IN ('not_a_failure', 'unsure')) AS n_failure_labels,
        count(*) FILTER (WHERE outcome = 'failure') AS n_failed,
        count(*) FILTER (WHERE outcome = 'failure' AND label IS NOT NULL) AS n_failed_labeled
    FROM traj CROSS JOIN categories c
    GROUP BY ALL
)
SELECT {{by}}
    category,
    n,
    n / nullif(n_labeled, 0) AS share,
    CASE WHEN category NOT IN ('not_a_failure', 'unsure') THEN n / nullif(n_failure_labels, 0) END
        AS failure_share,
    n_labeled,
    n_failed,
    n_failed_labeled / nullif(n_failed, 0) AS coverage
FROM counts
WHERE n_labeled > 0
ORDER BY {{by}} n DESC, category
