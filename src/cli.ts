#!/usr/bin/env node
/**
 * `switchyard <command>`: the one entry point (DESIGN.md layout). Each sub-command lives in
 * src/commands/<name>.ts and exports `run(argv: string[]): Promise<number>` (the exit code).
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> }> = {
  start: { summary: 'run embedded Postgres, the control plane and an evaluation node', load: () => import('./commands/start.js') },
  'control-plane': { summary: 'run the control plane (management API and gRPC)', load: () => import('./commands/control-plane.js') },
  'eval-node': { summary: 'run an evaluation node', load: () => import('./commands/eval-node.js') },
  quota: { summary: 'quota set --organization N --monthly-flag-requests M: limit /flags requests', load: () => import('./commands/quota.js') },
  keys: { summary: 'keys create --scopes a:read,b:write [--project N] | list | revoke <id>: personal API keys', load: () => import('./commands/keys.js') },
  users: { summary: 'users deactivate <id|email>: withdraw a user and their keys everywhere', load: () => import('./commands/users.js') },
  evaluate: { summary: 'print the /flags response for a request, offline', load: () => import('./commands/evaluate.js') },
  load: { summary: 'load --url <node> --key <phc_…>: PostHog-shaped load, latency and capacity (--ramp)', load: () => import('./commands/load.js') },
  stats: { summary: 'stats [input.json|-]: experiment statistics from per-variant sums, offline', load: () => import('./commands/stats.js') },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(14)} ${c.summary}`);
  return `usage: switchyard <command> [options]\n\ncommands:\n${lines.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    process.stderr.write(`switchyard: unknown command "${name}"\n${usage()}`);
    return 2;
  }
  return (await cmd.load()).run(rest);
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    process.stderr.write(`switchyard: ${err instanceof Error ? err.message : String(err)}\n`);
    const code = (err as { exitCode?: unknown } | null)?.exitCode;
    process.exitCode = typeof code === 'number' ? code : 1;
  },
);
