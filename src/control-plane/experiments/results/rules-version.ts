/**
 * The version of the rules experiment results are computed by: exposure, metric and statistics
 * rules (research/experiments.md; docs/statistics.md). Stored results (experiment timeseries)
 * carry the version they were computed with and are used only while it is current
 * (experiments/timeseries/), because a metric's fingerprint names what is computed, not how.
 *
 * Bump it with any change that alters a number an experiment query returns for the same events.
 * 1: the rules as of the replay of PostHog's ExperimentQueryRunner tests (conversion window and
 * maturity from the first exposure, funnels ending at the end date, one event per ordered funnel
 * step, retention start events within the window).
 */
export const RESULTS_RULES_VERSION = 1;
