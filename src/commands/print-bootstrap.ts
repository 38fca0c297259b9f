/** Prints the bootstrap keys that were generated on first start (the only time they are shown), and an ignored bootstrap project key. */
import type { BootstrapResult } from '../control-plane/bootstrap.js';

/** Writes the generated keys and where the API listens to stdout. */
export function printBootstrap(b: BootstrapResult, apiUrl: string): void {
  const lines = [`Switchyard management API on ${apiUrl} (project ${b.projectId})`];
  if (b.generatedPersonalApiKey) lines.push(`Generated personal API key (shown once): ${b.generatedPersonalApiKey}`);
  if (b.generatedProjectApiKey) lines.push(`Generated project API key: ${b.generatedProjectApiKey}`);
  else lines.push(`Project API key: ${b.projectApiKey}`);
  process.stdout.write(lines.join('\n') + '\n');
  if (b.ignoredProjectApiKey !== null) {
    process.stderr.write(`WARNING: SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY (${b.ignoredProjectApiKey.slice(0, 8)}…) is ignored: `
      + `this data dir already has project ${b.projectId} with key ${b.projectApiKey}. Unset it, or use a new SWITCHYARD_DATA_DIR.\n`);
  }
}
