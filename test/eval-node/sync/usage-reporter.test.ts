/**
 * The quota loop end to end: a node's usage reporter ships counts over gRPC, the control plane
 * records them and flips `quota_limited`, and the change reaches the node's store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../src/log.js';
import { flagRequestUsage, setMonthlyFlagRequestLimit } from '../../../src/control-plane/quota/service.js';
import { startUsageReporter, usagePeriodOf } from '../../../src/eval-node/sync/usage-reporter.js';
import { seedOrganization } from '../../support/seed.js';
import { syncFixture, waitForHead } from '../../support/sync.js';
import { waitFor } from '../../support/wait.js';

test('reported usage reaches the quota and the quota reaches the node; failed reports keep their counts', async () => {
  const fx = await syncFixture();
  try {
    const org = await seedOrganization(fx.db.sql);
    await setMonthlyFlagRequestLimit(fx.db.sql, org, 10);
    let counts = new Map<number, number>();
    const take = (): Map<number, number> => { const out = counts; counts = new Map(); return out; };
    const reporter = startUsageReporter({ controlPlane: fx.config.controlPlane, clusterToken: fx.config.clusterToken!, nodeId: 'n1', take, intervalMs: 3_600_000 }, createLogger('silent'));
    try {
      counts.set(org, 4);
      assert.equal(await reporter.flush(500), false, 'no control plane yet');
      assert.equal(reporter.pending().get(org), 4, 'kept for the next attempt');

      await fx.startServer();
      const node = await fx.startNode();
      await waitForHead(fx.db, node.store);
      assert.equal(node.store.organization(org)?.quota_limited, false);

      counts.set(org, 7);
      await waitFor('report accepted', () => reporter.flush());
      const period = usagePeriodOf(new Date());
      assert.equal(await flagRequestUsage(fx.db.sql, org, period), 11);
      assert.equal(reporter.pending().size, 0);
      await waitFor('quota_limited on the node', () => node.store.organization(org)?.quota_limited === true);
    } finally {
      await reporter.close();
    }
  } finally {
    await fx.close();
  }
});
