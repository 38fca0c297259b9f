/**
 * Preloaded into every test process (`node --import`, test/support/schedule.ts) before node:test
 * loads: keeps node:test's async-resource hook from being enabled.
 *
 * node:test (Node 20, lib/internal/test_runner/harness.js) enables an `async_hooks` hook with
 * `init` and `destroy` callbacks in every process that loads it, only to tell which test an
 * uncaught exception came from. Those callbacks run for every promise the process creates, the
 * in-process control planes and nodes of the tests included: an `await` costs about 17 times as
 * much CPU with it on (2,000,000 awaits of resolved promises: 4.8 s against 0.28 s on a 2-core
 * machine). Without it an uncaught exception or unhandled rejection still fails the file (node:test
 * reports it as asynchronous activity after a test, and the process exits 1), only not under the
 * name of the test whose code threw it.
 *
 * It wraps `async_hooks.createHook` so that the hook created from node:test's harness module
 * (recognised by its call stack) gets an `enable` that does nothing; every other hook is
 * untouched. Idempotent; a process that never loads node:test is unaffected.
 */
import asyncHooks from 'node:async_hooks';

/** The path fragment of the module whose hook is left disabled. */
const HARNESS = 'internal/test_runner/harness';

const original = asyncHooks.createHook;
if (!(original as { noResourceHook?: true }).noResourceHook) {
  const wrapped = function createHook(this: unknown, callbacks: asyncHooks.HookCallbacks): asyncHooks.AsyncHook {
    const hook = original.call(this, callbacks);
    if ((new Error().stack ?? '').includes(HARNESS)) hook.enable = function enable(this: asyncHooks.AsyncHook) { return this; };
    return hook;
  };
  (wrapped as { noResourceHook?: true }).noResourceHook = true;
  asyncHooks.createHook = wrapped;
}
