-- Project settings that shape the browser SDK's remote config (PostHog's team
-- fields of the same names, served to posthog-js at /array/<token>/config by nodes).
ALTER TABLE projects
  ADD COLUMN autocapture_opt_out           boolean NOT NULL DEFAULT false,
  ADD COLUMN autocapture_exceptions_opt_in boolean NOT NULL DEFAULT false,
  ADD COLUMN heatmaps_opt_in               boolean NOT NULL DEFAULT false,
  ADD COLUMN capture_dead_clicks           boolean NOT NULL DEFAULT false,
  ADD COLUMN capture_performance_opt_in    boolean NOT NULL DEFAULT false;
