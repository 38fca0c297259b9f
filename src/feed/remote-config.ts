/**
 * posthog-js's remote config for a project (PostHog `RemoteConfig.build_config`, served at
 * `/array/<token>/config` as JSON and `/array/<token>/config.js` as a script that fills
 * `window._POSTHOG_REMOTE_CONFIG[<token>]`). posthog-js reads it once per page load and turns
 * features on or off by it; the fields Switchyard has no product behind (session recording,
 * surveys, product tours, site apps) are answered off. posthog-js may still ask for some of
 * their scripts; nodes answer those (eval-node/http/static-assets.ts).
 * Sources: research/posthog-flag-evaluation.md §5.2 (`config=true` keys) and posthog-js's
 * `RemoteConfigLoader` / `_onRemoteConfig`. Pure.
 */
import { DEFAULT_PROJECT_SETTINGS, type ProjectEntity } from '../contract/entities.js';

/** The remote config object (PostHog's keys; see the module doc). */
export interface RemoteConfig {
  token: string;
  supportedCompression: string[];
  hasFeatureFlags: boolean;
  captureDeadClicks: boolean;
  capturePerformance: false | { network_timing: boolean; web_vitals: boolean; web_vitals_allowed_metrics: null };
  autocapture_opt_out: boolean;
  autocaptureExceptions: boolean;
  analytics: { endpoint: string };
  elementsChainAsString: boolean;
  errorTracking: { autocaptureExceptions: boolean; suppressionRules: unknown[] };
  sessionRecording: false;
  heatmaps: boolean;
  surveys: false;
  productTours: false;
  defaultIdentifiedOnly: boolean;
  siteApps: unknown[];
}

/**
 * Builds the config of `project`. `hasFeatureFlags` is whether the project has an active flag
 * (PostHog: posthog-js then skips its first /flags call when false).
 */
export function buildRemoteConfig(project: ProjectEntity, hasFeatureFlags: boolean): RemoteConfig {
  const s = project.settings ?? DEFAULT_PROJECT_SETTINGS;
  return {
    token: project.api_token,
    // What capture decodes (decode.ts): posthog-js then sends gzip bodies, `?compression=gzip-js`.
    supportedCompression: ['gzip', 'gzip-js'],
    hasFeatureFlags,
    captureDeadClicks: s.capture_dead_clicks,
    capturePerformance: s.capture_performance_opt_in ? { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null } : false,
    autocapture_opt_out: s.autocapture_opt_out,
    autocaptureExceptions: s.autocapture_exceptions_opt_in,
    analytics: { endpoint: '/i/v0/e/' },
    elementsChainAsString: true,
    errorTracking: { autocaptureExceptions: s.autocapture_exceptions_opt_in, suppressionRules: [] },
    sessionRecording: false,
    heatmaps: s.heatmaps_opt_in,
    surveys: false,
    productTours: false,
    defaultIdentifiedOnly: true,
    siteApps: [],
  };
}

/** The `config.js` script: assigns `{config, siteApps}` to `window._POSTHOG_REMOTE_CONFIG[token]`. */
export function remoteConfigScript(config: RemoteConfig): string {
  // JSON is valid JavaScript; `<` is escaped so the text can never close an inline <script>.
  const json = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  return '(function() {\n'
    + '  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n'
    + `  window._POSTHOG_REMOTE_CONFIG[${json(config.token)}] = {\n`
    + `    config: ${json(config)},\n`
    + `    siteApps: ${json(config.siteApps)}\n`
    + '  };\n'
    + '})();\n';
}
