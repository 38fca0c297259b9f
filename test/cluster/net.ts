/**
 * Hosts as Linux network namespaces on a bridge of their own: one private /24, a veth pair per
 * host, no default route anywhere (nothing leaves the bridge). The root namespace holds the
 * bridge's .1 address so the test process can reach every host. Every name carries the run's
 * id, so {@link removeRun} finds and removes all of it (processes, namespaces, veths, bridge)
 * even after the process that created it died.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';

/** One host: its namespace and address. */
export interface Host { name: string; ns: string; ip: string }

/** Runs `ip …`; throws with its stderr on failure. */
export function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The namespace prefix of run `id`. */
export function nsPrefix(id: string): string { return `syc${id}-`; }

/** The bridge of run `id` (at most 15 characters). */
export function bridgeName(id: string): string { return `sycbr${id}`; }

/** A network of hosts on `10.213.<octet>.0/24`. */
export class Network {
  readonly hosts = new Map<string, Host>();
  readonly bridge: string;
  readonly subnet: string;
  private nextVeth = 0;

  constructor(readonly id: string, octet: number) {
    this.bridge = bridgeName(id);
    this.subnet = `10.213.${octet}`;
  }

  /** The address of the root namespace on the bridge. */
  get gateway(): string { return `${this.subnet}.1`; }

  /** Creates the bridge and gives the root namespace its .1 address. */
  up(): void {
    ip('link', 'add', this.bridge, 'type', 'bridge');
    ip('addr', 'add', `${this.gateway}/24`, 'dev', this.bridge);
    ip('link', 'set', this.bridge, 'up');
  }

  /** Creates host `name` with address `.<last>`. */
  addHost(name: string, last: number): Host {
    const ns = `${nsPrefix(this.id)}${name}`;
    const n = this.nextVeth++;
    const outer = `syc${this.id}h${n}`;
    const inner = `syc${this.id}p${n}`;
    const host: Host = { name, ns, ip: `${this.subnet}.${last}` };
    ip('netns', 'add', ns);
    this.hosts.set(name, host);
    ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
    ip('link', 'set', inner, 'netns', ns);
    ip('link', 'set', outer, 'master', this.bridge);
    ip('link', 'set', outer, 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('-n', ns, 'link', 'set', inner, 'name', 'eth0');
    ip('-n', ns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    return host;
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name}`);
    return h;
  }

  /** Drops every packet between hosts `a` and `b`, both ways (blackhole routes on each side). */
  cut(a: string, b: string): void {
    ip('-n', this.host(a).ns, 'route', 'add', 'blackhole', `${this.host(b).ip}/32`);
    ip('-n', this.host(b).ns, 'route', 'add', 'blackhole', `${this.host(a).ip}/32`);
  }

  /** Undoes {@link cut}. */
  restore(a: string, b: string): void {
    ip('-n', this.host(a).ns, 'route', 'del', 'blackhole', `${this.host(b).ip}/32`);
    ip('-n', this.host(b).ns, 'route', 'del', 'blackhole', `${this.host(a).ip}/32`);
  }
}

/** Namespaces of run `id` that exist now. */
function namespaces(id: string): string[] {
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  return (r.stdout ?? '').split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith(nsPrefix(id)));
}

/**
 * Removes everything run `id` created: SIGKILLs every process in its namespaces, deletes them
 * (which deletes their veths) and its bridge. Synchronous, so it can run in an exit handler.
 */
export function removeRun(id: string): void {
  for (const ns of namespaces(id)) {
    const pids = (spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '').split('\n').filter(Boolean);
    for (const pid of pids) { try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ } }
  }
  // A killed process can take a moment to release its namespace; `ip netns del` works anyway
  // (the namespace disappears with its last process).
  for (const ns of namespaces(id)) spawnSync('ip', ['netns', 'del', ns]);
  spawnSync('ip', ['link', 'del', bridgeName(id)], { stdio: 'ignore' });
  const links = (spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? '').split('\n');
  for (const l of links) {
    const m = /^\d+: (syc[^@:]+)/.exec(l);
    if (m && (m[1].startsWith(`syc${id}h`) || m[1].startsWith(`syc${id}p`))) spawnSync('ip', ['link', 'del', m[1]], { stdio: 'ignore' });
  }
}

/** Prefix of run `id`'s temporary directory. */
export function tempPrefix(id: string): string { return path.join(os.tmpdir(), `switchyard-cluster-${id}-`); }

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/**
 * Removes what earlier runs left behind when their runner was killed outright (SIGKILL): the
 * namespaces, links and temp dirs of every run id whose process (the runner) is gone.
 */
export function removeStale(): void {
  const out = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  const ids = new Set([...out.matchAll(/^syc(\d+)-/gm)].map((m) => m[1]));
  for (const e of fs.readdirSync(os.tmpdir())) {
    const m = /^switchyard-cluster-(\d+)-/.exec(e);
    if (m) ids.add(m[1]);
  }
  for (const id of ids) {
    if (Number(id) === process.pid || alive(Number(id))) continue;
    removeRun(id);
    for (const e of fs.readdirSync(os.tmpdir())) {
      if (e.startsWith(path.basename(tempPrefix(id)))) fs.rmSync(path.join(os.tmpdir(), e), { recursive: true, force: true });
    }
  }
}
