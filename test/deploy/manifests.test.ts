/**
 * The deployment artefacts under deploy/, checked with the tools that consume them:
 * - every kustomize overlay rendered by `kubectl kustomize`, each object validated against the
 *   Kubernetes API schema offline (kubernetes-models and @kubernetes-models/prometheus-operator
 *   ship the schemas as compiled validators), fields the schema does not know refused as
 *   `kubectl --validate=strict` refuses them, and the invariants docs/operations.md states
 *   (probes, drain on stop, resources, Secrets referenced, PDB and HPA in `ha`);
 * - the alert rules through `promtool check rules` and `promtool test rules`, each alert with a
 *   runbook section in docs/operations.md;
 * - the Grafana dashboard: valid JSON whose every query names metrics that src/ exports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { collectDefaultMetrics, Registry } from 'prom-client';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const deploy = path.join(repo, 'deploy');
const overlaysDir = path.join(deploy, 'kubernetes', 'overlays');
const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';
const PROMTOOL = process.env.PROMTOOL ?? '/usr/bin/promtool';

// ---------------------------------------------------------------------------------------------
// Tools

/** Runs a tool that must be installed; a missing one fails the test saying how to get it. */
function run(tool: string, args: string[], install: string, cwd = repo): string {
  if (!fs.existsSync(tool)) assert.fail(`${tool} is missing: ${install}`);
  try {
    return execFileSync(tool, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    assert.fail(`${path.basename(tool)} ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
  }
}

const KUBECTL_INSTALL = 'kubectl with kustomize v5 (kubectl 1.27 or later) is needed; set KUBECTL to its path (Debian bookworm\'s kubernetes-client 1.20 is too old)';

function kustomizeMajor(): number {
  const v = JSON.parse(run(KUBECTL, ['version', '--client', '-o', 'json'], KUBECTL_INSTALL)) as { kustomizeVersion?: string };
  return Number(/^v?(\d+)/.exec(v.kustomizeVersion ?? '')?.[1] ?? 0);
}

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec?: any; [k: string]: any };

function render(overlay: string): Obj[] {
  const text = run(KUBECTL, ['kustomize', path.join(overlaysDir, overlay)], KUBECTL_INSTALL);
  const docs = parseAllDocuments(text);
  const out: Obj[] = [];
  for (const d of docs) {
    assert.deepEqual(d.errors, [], `${overlay}: YAML errors`);
    const o = d.toJS() as Obj | null;
    if (o) out.push(o);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Schema validation

/** The kubernetes-models module declaring `apiVersion` (computed: the models are found by group). */
function modelModule(apiVersion: string): string {
  if (apiVersion.startsWith('monitoring.coreos.com/')) return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

type ModelClass = { new (data: unknown): { toJSON(): unknown }; prototype: { validate(): void } };

async function modelFor(apiVersion: string, kind: string): Promise<ModelClass> {
  let mod: Record<string, unknown>;
  try {
    mod = await import(modelModule(apiVersion)) as Record<string, unknown>;
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && /kubernetes-models/.test(String(e))) {
      assert.fail(`${modelModule(apiVersion)} is not installed: kubernetes-models and @kubernetes-models/prometheus-operator are devDependencies (npm install)`);
    }
    assert.fail(`no schema for ${apiVersion}: ${(e as Error).message}`);
  }
  const model = mod[kind] as ModelClass | undefined;
  assert.ok(model, `no schema for ${apiVersion} ${kind}`);
  return model;
}

interface Visit { path: string; value: object; read: Set<string>; enumerated: boolean }

/** A copy of `value` whose objects record which keys the validator reads, and whether it enumerates them (a map). */
function tracked(value: unknown, at: string, visits: Visit[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  const visit: Visit = { path: at, value, read: new Set(), enumerated: false };
  visits.push(visit);
  const copy = Array.isArray(value)
    ? value.map((v, i) => tracked(v, `${at}/${i}`, visits))
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tracked(v, `${at}/${k}`, visits)]));
  return new Proxy(copy, {
    get(t, k, r) { if (typeof k === 'string') visit.read.add(k); return Reflect.get(t, k, r); },
    has(t, k) { if (typeof k === 'string') visit.read.add(k); return Reflect.has(t, k); },
    ownKeys(t) { visit.enumerated = true; return Reflect.ownKeys(t); },
  });
}

/**
 * Schema errors of `o`, and the fields its schema does not declare. The compiled validators
 * read every declared property of an object (and enumerate the keys of maps such as labels),
 * so a key of a non-map object that was never read is unknown to the API.
 */
async function validate(o: Obj): Promise<string[]> {
  const Model = await modelFor(o.apiVersion, o.kind);
  const visits: Visit[] = [];
  const problems: string[] = [];
  try {
    Model.prototype.validate.call(tracked(new Model(o).toJSON(), '', visits));
  } catch (e) {
    problems.push((e as Error).message);
  }
  for (const v of visits) {
    if (Array.isArray(v.value) || v.enumerated) continue;
    for (const k of Object.keys(v.value)) if (!v.read.has(k)) problems.push(`${v.path}/${k}: unknown field`);
  }
  return problems.map((p) => `${o.kind}/${o.metadata?.name}: ${p}`);
}

// ---------------------------------------------------------------------------------------------
// Invariants

const WORKLOADS = new Set(['Deployment', 'StatefulSet']);

function env(c: any, name: string): any {
  return (c.env ?? []).find((e: any) => e.name === name);
}

/** Seconds a numeric env var is set to; it must be set explicitly (the grace period depends on it). */
function envSeconds(c: any, name: string): number {
  const v = env(c, name)?.value;
  assert.match(String(v), /^\d+$/, `${c.name}: ${name} must be set to whole seconds`);
  return Number(v);
}

function cpuCores(q: string): number {
  return q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q);
}

function matches(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

function checkWorkload(w: Obj): void {
  const pod = w.spec.template.spec;
  const where = `${w.kind}/${w.metadata.name}`;
  assert.ok(matches(w.spec.selector.matchLabels, w.spec.template.metadata.labels), `${where}: selector does not match its pods`);
  for (const c of pod.containers) {
    const at = `${where} ${c.name}`;
    const ports = new Set((c.ports ?? []).map((p: any) => p.name));
    // Probes: started and alive on /_health, ready on /_ready, on a port the container declares.
    for (const [probe, p] of [['startupProbe', '/_health'], ['livenessProbe', '/_health'], ['readinessProbe', '/_ready']] as const) {
      assert.equal(c[probe]?.httpGet?.path, p, `${at}: ${probe} on ${p}`);
      assert.ok(ports.has(c[probe].httpGet.port), `${at}: ${probe} port ${c[probe].httpGet.port} is not a container port`);
    }
    // The stop: preStop, then SIGTERM → drain → in-flight work, all within the grace period.
    const sleep = c.lifecycle?.preStop?.exec?.command ?? [];
    assert.equal(sleep[0], 'sleep', `${at}: preStop hook sleeps while endpoints drop the pod`);
    const total = Number(sleep[1]) + envSeconds(c, 'SWITCHYARD_DRAIN_SECONDS') + envSeconds(c, 'SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS');
    assert.ok(pod.terminationGracePeriodSeconds >= total, `${at}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} < preStop + drain + shutdown timeout (${total})`);
    // Resources: requests for the scheduler and the HPA, a memory limit.
    assert.ok(c.resources?.requests?.cpu && c.resources?.requests?.memory, `${at}: CPU and memory requests`);
    assert.ok(c.resources?.limits?.memory, `${at}: memory limit`);
    const threads = env(c, 'SWITCHYARD_IO_THREADS');
    if (threads) assert.ok(Number(threads.value) <= Math.max(1, cpuCores(c.resources.requests.cpu)), `${at}: more IO threads than requested cores`);
    // Secrets referenced, never inlined.
    for (const e of c.env ?? []) {
      if (/DATABASE_URL|TOKEN|PASSWORD|KEY/.test(e.name)) {
        assert.equal(e.value, undefined, `${at}: ${e.name} inlined`);
        assert.ok(e.valueFrom?.secretKeyRef?.name, `${at}: ${e.name} from a Secret`);
      }
      assert.doesNotMatch(String(e.value ?? ''), /postgres(ql)?:\/\/|phx_|phc_/, `${at}: ${e.name} holds a credential`);
    }
    assert.ok(env(c, 'SWITCHYARD_CLUSTER_TOKEN')?.valueFrom?.secretKeyRef, `${at}: cluster token from a Secret`);
    // The data dir is a volume.
    const dataDir = env(c, 'SWITCHYARD_DATA_DIR')?.value;
    assert.ok((c.volumeMounts ?? []).some((m: any) => m.mountPath === dataDir), `${at}: SWITCHYARD_DATA_DIR ${dataDir} is a mounted volume`);
  }
}

function role(objs: Obj[], kind: string, component: string): Obj {
  const found = objs.filter((o) => o.kind === kind && o.spec?.template?.metadata?.labels?.['app.kubernetes.io/component'] === component);
  assert.equal(found.length, 1, `one ${kind} of ${component}`);
  return found[0];
}

function checkTopology(objs: Obj[]): { cp: Obj; node: Obj } {
  assert.deepEqual(objs.filter((o) => o.kind === 'Secret' || o.kind === 'ConfigMap').map((o) => o.metadata.name), [], 'no Secret or ConfigMap rendered: credentials are created outside');
  const cp = role(objs, 'Deployment', 'control-plane');
  const node = role(objs, 'StatefulSet', 'eval-node');
  const workloads = objs.filter((o) => WORKLOADS.has(o.kind));
  for (const w of workloads) checkWorkload(w);
  const services = objs.filter((o) => o.kind === 'Service');
  for (const s of services) {
    const backends = workloads.filter((w) => matches(s.spec.selector, w.spec.template.metadata.labels));
    assert.equal(backends.length, 1, `Service/${s.metadata.name} selects one workload`);
    const ports = new Set(backends[0].spec.template.spec.containers.flatMap((c: any) => c.ports.map((p: any) => p.name)));
    for (const p of s.spec.ports) assert.ok(ports.has(p.targetPort), `Service/${s.metadata.name}: targetPort ${p.targetPort}`);
  }
  // Control plane: Postgres URL from the Secret.
  assert.ok(env(cp.spec.template.spec.containers[0], 'DATABASE_URL')?.valueFrom?.secretKeyRef, 'control plane: DATABASE_URL from a Secret');
  // Nodes reach the control planes through a headless Service's DNS name.
  const target = env(node.spec.template.spec.containers[0], 'SWITCHYARD_CONTROL_PLANE').value as string;
  for (const addr of target.split(',')) {
    const [host, port] = addr.split(':');
    const svc = services.find((s) => s.metadata.name === host.split('.')[0]);
    assert.ok(svc, `SWITCHYARD_CONTROL_PLANE ${addr}: no such Service`);
    assert.equal(svc.spec.clusterIP, 'None', `${host} is headless (resolves to every control plane)`);
    assert.ok(matches(svc.spec.selector, cp.spec.template.metadata.labels), `${host} selects the control planes`);
    assert.ok(svc.spec.ports.some((p: any) => String(p.port) === port && p.targetPort === 'grpc'), `${addr}: the gRPC port`);
  }
  // The StatefulSet's governing Service exists; its data dir is a volume claim.
  assert.ok(services.some((s) => s.metadata.name === node.spec.serviceName && s.spec.clusterIP === 'None'), 'nodes: headless governing Service');
  assert.ok(node.spec.volumeClaimTemplates.some((t: any) => t.metadata.name === 'data' && t.spec.resources.requests.storage), 'nodes: a volume claim for the store and outbox');
  // ServiceMonitors scrape /metrics of both tiers through a Service port.
  const monitors = objs.filter((o) => o.kind === 'ServiceMonitor');
  for (const w of [cp, node]) {
    const m = monitors.find((sm) => services.some((s) => matches(sm.spec.selector.matchLabels, s.metadata.labels) && matches(s.spec.selector, w.spec.template.metadata.labels)
      && sm.spec.endpoints.every((e: any) => e.path === '/metrics' && s.spec.ports.some((p: any) => p.name === e.port))));
    assert.ok(m, `a ServiceMonitor scrapes ${w.metadata.name}`);
  }
  return { cp, node };
}

// ---------------------------------------------------------------------------------------------
// Tests

test('kubectl can render the overlays (kustomize v5)', () => {
  assert.ok(kustomizeMajor() >= 5, KUBECTL_INSTALL);
});

test('the overlays are small and ha', () => {
  assert.deepEqual(fs.readdirSync(overlaysDir).sort(), ['ha', 'small']);
});

for (const overlay of ['small', 'ha']) {
  test(`${overlay}: every object is valid against the Kubernetes API schema`, async () => {
    const objs = render(overlay);
    assert.ok(objs.length >= 8, `${overlay}: rendered ${objs.length} objects`);
    const problems = (await Promise.all(objs.map(validate))).flat();
    assert.deepEqual(problems, []);
    for (const o of objs) assert.equal(o.metadata.namespace, 'switchyard', `${o.kind}/${o.metadata.name} namespace`);
  });
}

test('small: one control plane, two nodes, nothing autoscaled', () => {
  const objs = render('small');
  const { cp, node } = checkTopology(objs);
  assert.equal(cp.spec.replicas, 1);
  assert.equal(node.spec.replicas, 2);
  assert.deepEqual(objs.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'PodDisruptionBudget'), []);
});

test('ha: two control planes under a PodDisruptionBudget, nodes under a CPU HorizontalPodAutoscaler', () => {
  const objs = render('ha');
  const { cp, node } = checkTopology(objs);
  assert.ok(cp.spec.replicas >= 2, 'two control planes');
  const cpPdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && matches(o.spec.selector.matchLabels, cp.spec.template.metadata.labels));
  assert.ok(cpPdb, 'a PDB selects the control planes');
  assert.ok(cpPdb.spec.minAvailable >= 1 && cpPdb.spec.minAvailable < cp.spec.replicas, 'the PDB keeps one up and lets one go');
  const hpa = objs.find((o) => o.kind === 'HorizontalPodAutoscaler');
  assert.ok(hpa, 'an HPA');
  assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'StatefulSet', name: node.metadata.name });
  assert.ok(hpa.spec.metrics.some((m: any) => m.type === 'Resource' && m.resource.name === 'cpu'), 'scaled on CPU');
  assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas > hpa.spec.minReplicas);
  assert.equal(node.spec.replicas, undefined, 'the HPA owns the node count: no replicas field to reset it');
  const spread = (w: Obj) => w.spec.template.spec.topologySpreadConstraints?.[0]?.topologyKey;
  assert.equal(spread(cp), 'kubernetes.io/hostname', 'control planes on different machines');
  assert.equal(spread(node), 'kubernetes.io/hostname', 'nodes spread over machines');
});

test('the schema check refuses wrong types, unknown fields and unknown kinds', async () => {
  const objs = render('small');
  const cp = role(objs, 'Deployment', 'control-plane');
  const broken = structuredClone(cp);
  broken.spec.replicas = 'two';
  const c = broken.spec.template.spec.containers[0];
  c.readinesProbe = c.readinessProbe;
  c.resources.requests.cpu = 'lots';
  const problems = await validate(broken);
  assert.ok(problems.some((p) => p.includes('/spec/replicas must be integer')), problems.join('\n'));
  assert.ok(problems.some((p) => p.includes('/requests/cpu') && p.includes('quantity')), problems.join('\n'));
  assert.ok(problems.some((p) => p.endsWith('/containers/0/readinesProbe: unknown field')), problems.join('\n'));
  assert.ok(!problems.some((p) => p.includes('labels')), 'labels are a map: any key is valid');
  const sm = objs.find((o) => o.kind === 'ServiceMonitor')!;
  const badMonitor = structuredClone(sm);
  badMonitor.spec.endpoints[0].interval = 'often';
  assert.ok((await validate(badMonitor)).some((p) => p.includes('interval')));
  await assert.rejects(validate({ ...cp, kind: 'Deploymnet' }), /no schema for apps\/v1 Deploymnet/);
});

// ---------------------------------------------------------------------------------------------
// Metrics named in alerts and the dashboard

/** Every metric name src/ exports: prom-client metrics declared by name, plus prom-client's default metrics under each prefix src/ collects them with. */
let exported: Promise<Set<string>> | null = null;
function exportedMetrics(): Promise<Set<string>> {
  exported ??= readExportedMetrics();
  return exported;
}

async function readExportedMetrics(): Promise<Set<string>> {
  const names = new Set<string>();
  const walk = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
  for (const file of walk(path.join(repo, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    // LatencyHistogram: the node's request-latency histogram read from plain counts (eval-node/http/route-counts.ts).
    for (const m of text.matchAll(/new (Counter|Gauge|Histogram|Summary|LatencyHistogram)\(\{\s*name: '(\w+)'/g)) {
      names.add(m[2]);
      if (m[1].endsWith('Histogram')) for (const s of ['_bucket', '_sum', '_count']) names.add(m[2] + s);
    }
    for (const m of text.matchAll(/addGauge\('(\w+)'/g)) names.add(m[1]);
    for (const m of text.matchAll(/collectDefaultMetrics\(\{[^}]*prefix: '(\w+)'/g)) {
      const registry = new Registry();
      collectDefaultMetrics({ register: registry, prefix: m[1] });
      for (const metric of await registry.getMetricsAsJSON()) {
        names.add(metric.name);
        if (String(metric.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(metric.name + s);
      }
      registry.clear();
    }
  }
  return names;
}

function switchyardMetrics(expr: string): string[] {
  return [...expr.matchAll(/\bswitchyard_\w+/g)].map((m) => m[0]);
}

const operations = () => fs.readFileSync(path.join(repo, 'docs', 'operations.md'), 'utf8');

/** GitHub's anchor for a Markdown heading. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
}

test('metric extraction finds the metrics src/ exports', async () => {
  const names = await exportedMetrics();
  for (const n of ['switchyard_node_http_requests_total', 'switchyard_node_http_request_duration_seconds_bucket', 'switchyard_node_sync_lag_revisions',
    'switchyard_node_memory_releases_total', 'switchyard_node_process_resident_memory_bytes', 'switchyard_api_requests_total', 'switchyard_api_process_cpu_seconds_total']) {
    assert.ok(names.has(n), n);
  }
  assert.ok(!names.has('switchyard_node_http_requests_total_bucket'), 'bucket series only for histograms');
});

test('alert rules: promtool check rules and promtool test rules', () => {
  const install = 'promtool comes with Debian\'s prometheus package (make test installs it)';
  const checked = run(PROMTOOL, ['check', 'rules', 'prometheus/alerts.yaml'], install, deploy);
  assert.match(checked, /SUCCESS: \d+ rules found/);
  const tested = run(PROMTOOL, ['test', 'rules', 'prometheus/alerts.test.yaml'], install, deploy);
  assert.match(tested, /SUCCESS/);
});

test('alert rules: each has a summary, a description and a runbook section; their metrics exist', async () => {
  const doc = parseAllDocuments(fs.readFileSync(path.join(deploy, 'prometheus', 'alerts.yaml'), 'utf8'))[0].toJS() as { groups: { rules: any[] }[] };
  const rules = doc.groups.flatMap((g) => g.rules);
  const anchors = new Set([...operations().matchAll(/^#{2,4} (.+)$/gm)].map((m) => anchor(m[1])));
  const names = await exportedMetrics();
  for (const r of rules) {
    assert.ok(r.annotations?.summary && r.annotations?.description, `${r.alert}: summary and description`);
    const [file, section] = String(r.annotations.runbook_url).split('#');
    assert.equal(file, 'docs/operations.md', `${r.alert}: runbook in docs/operations.md`);
    assert.ok(anchors.has(section), `${r.alert}: docs/operations.md has no section #${section}`);
    for (const m of switchyardMetrics(r.expr)) assert.ok(names.has(m), `${r.alert}: ${m} is not exported by src/`);
  }
  const exprs = rules.map((r) => r.expr).join('\n');
  for (const m of ['switchyard_node_sync_lag_revisions', 'switchyard_node_sync_connected', 'switchyard_node_capture_outbox_bytes', 'switchyard_node_http_requests_total', 'switchyard_api_requests_total', 'pg_replication_lag']) {
    assert.ok(exprs.includes(m), `an alert on ${m}`);
  }
});

test('Grafana dashboard: valid JSON; every query names metrics src/ exports', async () => {
  const dash = JSON.parse(fs.readFileSync(path.join(deploy, 'grafana', 'switchyard.json'), 'utf8')) as { panels: any[]; uid: string };
  assert.ok(dash.uid);
  const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t: any) => t.expr as string));
  assert.ok(exprs.length >= 10, 'panels with queries');
  const names = await exportedMetrics();
  const queried = new Set(exprs.flatMap(switchyardMetrics));
  assert.deepEqual([...queried].filter((m) => !names.has(m)), [], 'metrics the dashboard queries that src/ does not export');
  for (const m of ['switchyard_node_http_requests_total', 'switchyard_node_http_request_duration_seconds_bucket', 'switchyard_node_sync_lag_revisions',
    'switchyard_node_capture_outbox_bytes', 'switchyard_node_process_resident_memory_bytes', 'switchyard_api_requests_total', 'switchyard_api_process_resident_memory_bytes']) {
    assert.ok(queried.has(m), `the dashboard shows ${m}`);
  }
  for (const e of exprs) assert.ok(!/\bswitchyard_\w+\{/.test(e) || e.includes('namespace="$namespace"'), `${e}: filtered by $namespace`);
});
