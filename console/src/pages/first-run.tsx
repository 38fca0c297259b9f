/**
 * The first-run guide, shown on the flags page while the project has no flag: create a flag, then
 * point an SDK at an evaluation node with this project's API key (PostHog's SDKs unchanged). The
 * node's address is not known to the management API: the guide shows `make start`'s default
 * (this host, port 8010) and says so.
 */
import { api, projectId } from '../api.js';
import { useLoad } from '../components/use-load.js';

/** The guide. */
export function FirstRun() {
  const project = useLoad(() => api<{ id: number; name: string; api_token: string }>('GET', `/api/projects/${projectId()}/`), []);
  const token = project.data?.api_token ?? 'phc_…';
  const node = `${location.protocol}//${location.hostname}:8010`;
  const nodeSnippet = `import { PostHog } from 'posthog-node';
const posthog = new PostHog('${token}', { host: '${node}' });
if (await posthog.isFeatureEnabled('my-first-flag', 'user-42')) {
  // the new code path
}
await posthog.shutdown();`;
  const jsSnippet = `posthog.init('${token}', { api_host: '${node}' });
posthog.onFeatureFlags(() => { if (posthog.isFeatureEnabled('my-first-flag')) { /* … */ } });`;
  const curl = `curl -s -X POST '${node}/flags/?v=2' -H 'Content-Type: application/json' \\
  -d '{"api_key": "${token}", "distinct_id": "user-42"}'`;
  return (
    <section class="first-run">
      <h1>Feature flags</h1>
      <p class="notice">This project{project.data ? ` (${project.data.name})` : ''} has no feature flags yet. Three steps to your first one:</p>
      <ol class="steps">
        <li>
          <h2>Create a flag</h2>
          <p>Give it a key such as <code>my-first-flag</code>, roll it out to everyone or to a share of users, or target people by their properties.</p>
          <a class="button" href="#/flags/new">Create your first flag</a>
        </li>
        <li>
          <h2>Point an SDK at an evaluation node</h2>
          <p>PostHog's SDKs work unchanged. This project's API key is <code class="secret" data-project-key>{token}</code>; the node URL below is <code>make start</code>'s default on this host (port 8010) — use your node's address if it runs elsewhere.</p>
          <h3>Node.js (posthog-node)</h3>
          <pre><code>{nodeSnippet}</code></pre>
          <h3>Browser (posthog-js)</h3>
          <pre><code>{jsSnippet}</code></pre>
          <h3>Any HTTP client</h3>
          <pre><code>{curl}</code></pre>
        </li>
        <li>
          <h2>Measure it</h2>
          <p>Every evaluation the SDK reports (<code>$feature_flag_called</code>) feeds the flag's usage dashboard; an <a href="#/experiments/new">experiment</a> on the flag compares its variants.</p>
        </li>
      </ol>
    </section>
  );
}
