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
--   tokens_per_solved          all tokens spent by trajectories with token counts / how many of them succeeded
--   cost_per_solved            the same for cost_usd, when recorded
--   pareto                     no other group has both fewer mean total tokens per trajectory and at least
--                              the accuracy (one of the two strictly better)
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
        cost_usd
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
        sum(total) / nullif(count(*) FILTER (WHERE outcome = 'success' AND total IS NOT NULL), 0)
            AS tokens_per_solved,
        sum(cost_usd) / nullif(count(*) FILTER (WHERE outcome = 'success' AND cost_usd IS NOT NULL), 0)
            AS cost_per_solved
    FROM traj
    GROUP BY ALL
)
SELECT g.*,
    g.accuracy IS NOT NULL AND g.total_tokens IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM groups o
        WHERE o.total_tokens <= g.total_tokens AND o.accuracy >= g.accuracy
          AND (o.total_tokens < g.total_tokens OR o.accuracy > g.accuracy)
    ) AS pareto
FROM groups g
-- ties in tokens: the more accurate group first, then the group columns, so the order is the same every run
ORDER BY g.total_tokens NULLS LAST, g.accuracy DESC NULLS LAST, {{by}} g.n_traj DESC
