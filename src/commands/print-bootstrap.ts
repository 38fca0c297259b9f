/**
 * What the commands print once they serve: the bootstrap keys generated on first start (the only
 * time a generated personal key is shown), an ignored bootstrap project key, and for
 * `switchyard start` one short closing block with every URL and key a first user needs.
 */
import type { BootstrapResult } from '../control-plane/bootstrap.js';

function warnIgnored(b: BootstrapResult): void {
  if (b.ignoredProjectApiKey !== null) {
    process.stderr.write(`WARNING: SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY (${b.ignoredProjectApiKey.slice(0, 8)}…) is ignored: `
      + `this data dir already has project ${b.projectId} with key ${b.projectApiKey}. Unset it, or use a new SWITCHYARD_DATA_DIR.\n`);
  }
}

/** `switchyard control-plane`: writes the generated keys and where the API listens to stdout. */
export function printBootstrap(b: BootstrapResult, apiUrl: string): void {
  const lines = [`Switchyard management API on ${apiUrl} (project ${b.projectId})`];
  if (b.generatedPersonalApiKey) lines.push(`Generated personal API key (shown once): ${b.generatedPersonalApiKey}`);
  if (b.generatedProjectApiKey) lines.push(`Generated project API key: ${b.generatedProjectApiKey}`);
  else lines.push(`Project API key: ${b.projectApiKey}`);
  process.stdout.write(lines.join('\n') + '\n');
  warnIgnored(b);
}

/** Where `switchyard start` serves; `consoleUrl` null when no console bundle was built. */
export interface StartUrls { apiUrl: string; consoleUrl: string | null; flagsUrl: string; grpc: string; clusterTokenFile: string }

/**
 * The closing block of `switchyard start` (written after every service is up, so it ends the
 * output): console, API and flags URLs, the personal API key (generated: shown once; from
 * SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY: repeated; otherwise how to make one), the project API
 * key, and how another node joins.
 * @returns the block's text (also written to stdout).
 */
export function startSummary(b: BootstrapResult, urls: StartUrls, configuredPersonalKey: string | null): string {
  const personal = b.generatedPersonalApiKey ? `${b.generatedPersonalApiKey}   (generated: shown once, keep it)`
    : configuredPersonalKey ? `${configuredPersonalKey}   (SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY)`
      : 'shown on first start only; make one with: node dist/src/cli.js keys create --scopes feature_flag:write';
  const rule = '─'.repeat(64);
  return [
    rule,
    `Switchyard is running (project ${b.projectId})`,
    `  Console           ${urls.consoleUrl ?? 'not built (make build bundles it)'}`,
    `  Management API    ${urls.apiUrl}`,
    `  Flags & capture   ${urls.flagsUrl}`,
    `  Personal API key  ${personal}`,
    `  Project API key   ${b.projectApiKey}`,
    `  Another node: gRPC ${urls.grpc}, SWITCHYARD_CLUSTER_TOKEN from ${urls.clusterTokenFile}`,
    rule,
  ].join('\n') + '\n';
}

/** Writes {@link startSummary} to stdout (and the ignored-key warning to stderr first). */
export function printStartSummary(b: BootstrapResult, urls: StartUrls, configuredPersonalKey: string | null): void {
  warnIgnored(b);
  process.stdout.write(startSummary(b, urls, configuredPersonalKey));
}
