-- @title Token efficiency: tokens per trajectory and per solved task, accuracy, Pareto frontier
-- @kind analysis
-- @by model, harness, reasoning_effort
--
-- Per group:
--   n_traj, n_with_tokens      trajectories, and those that record any token count
--   n_success, n_failure       trajectories with a known outcome
--   accuracy                   n_success / (n_success + n_failure); NULL when no outcome is known
--   prompt_tokens ... total_tokens   mean per trajectory over the trajectories that record them
--                              (total = the runner's total, else prompt + completion)
--   n_scored, n_scored_success trajectories with both a known outcome and token counts, and their successes
--   scored_accuracy            n_scored_success / n_scored
--   scored_tokens              mean total tokens over those n_scored trajectories
--   tokens_per_solved          all tokens spent by the n_scored trajectories / n_scored_success (a run whose
--                              outcome is unknown is neither a solve nor an attempt that failed: left out)
--   cost_per_solved            the same for cost_usd, when recorded
--   pareto                     no other group has both fewer scored_tokens and at least the scored_accuracy
--                              (one of the two strictly better). Accuracy and tokens come from the same
--                              trajectories, so a group whose successes have no token counts and whose
--                              token counts have no outcome is no point at all
--
-- {{by}} grouping columns followed by a comma (`model, harness,`), or nothing
WITH traj AS (
    SELECT {{by}}
        outcome,
        input_tokens,
        output_tokens,
        reasoning_tokens,
        cached_tokens,
        coalesce(total_tokens, input_tokens + coalesce(output_tokens, 0), output_tokens) AS total,
        cost_usd,
        outcome IN ('success', 'failure') AS known
    FROM trajectories
),
groups AS (
    SELECT {{by}}
        count(*) AS n_traj,
        count(total) AS n_with_tokens,
        count(*) FILTER (WHERE outcome = 'success') AS n_success,
        count(*) FILTER (WHERE outcome = 'failure') AS n_failure,
        n_success / nullif(n_success + n_failure, 0) AS accuracy,
        avg(input_tokens) AS prompt_tokens,
        avg(output_tokens) AS completion_tokens,
        avg(reasoning_tokens) AS reasoning_tokens,
        avg(cached_tokens) AS cached_tokens,
        avg(total) AS total_tokens,
        count(total) FILTER (WHERE known) AS n_scored,
        count(total) FILTER (WHERE outcome = 'success') AS n_scored_success,
        n_scored_success / nullif(n_scored, 0) AS scored_accuracy,
        avg(total) FILTER (WHERE known) AS scored_tokens,
        sum(total) FILTER (WHERE known) / nullif(n_scored_success, 0) AS tokens_per_solved,
        sum(cost_usd) FILTER (WHERE known)
            / nullif(count(cost_usd) FILTER (WHERE outcome = 'success'), 0) AS cost_per_solved
    FROM traj
    GROUP BY ALL
)
SELECT g.*,
    g.scored_accuracy IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM groups o
        WHERE o.scored_tokens <= g.scored_tokens AND o.scored_accuracy >= g.scored_accuracy
          AND (o.scored_tokens < g.scored_tokens OR o.scored_accuracy > g.scored_accuracy)
    ) AS pareto
FROM groups g
-- ties in tokens: the more accurate group first, then the group columns, so the order is the same every run
ORDER BY g.total_tokens NULLS LAST, g.accuracy DESC NULLS LAST, {{by}} g.n_traj DESC
