/** gRPC ReportUsage through a raw client: recorded per organization and period, statuses as rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { switchyardService } from '../../../src/contract/loader.js';
import { clusterTokenMetadata } from '../../../src/control-plane/grpc/auth.js';
import { flagRequestUsage } from '../../../src/control-plane/quota/service.js';
import { seedOrganization } from '../../support/seed.js';
import { syncFixture } from '../../support/sync.js';

test('ReportUsage adds counts per organization and period; bad input and tokens are refused', async () => {
  const fx = await syncFixture();
  try {
    const org = await seedOrganization(fx.db.sql);
    await fx.startServer();
    const client = new (switchyardService())(fx.config.controlPlane, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, any>;
    const report = (req: unknown, token = fx.config.clusterToken!): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) => client.ReportUsage(req, clusterTokenMetadata(token), (err: grpc.ServiceError | null) => resolve(err)));

    assert.equal(await report({ node_id: 'n', counts: { [org]: '7' }, period: '2026-11' }), null);
    assert.equal(await report({ node_id: 'n', counts: { [org]: '5', 999999: '3' }, period: '2026-11' }), null, 'unknown organizations are ignored');
    assert.equal(await flagRequestUsage(fx.db.sql, org, '2026-11'), 12);

    const rows: { name: string; req: unknown; token?: string; code: grpc.status }[] = [
      { name: 'wrong token', req: { node_id: 'n', counts: { [org]: '1' }, period: '2026-11' }, token: 'nope', code: grpc.status.UNAUTHENTICATED },
      { name: 'bad period', req: { node_id: 'n', counts: { [org]: '1' }, period: '2026-13' }, code: grpc.status.INVALID_ARGUMENT },
      { name: 'negative count', req: { node_id: 'n', counts: { [org]: '-4' }, period: '2026-11' }, code: grpc.status.INVALID_ARGUMENT },
    ];
    for (const r of rows) assert.equal((await report(r.req, r.token))?.code, r.code, r.name);
    assert.equal(await flagRequestUsage(fx.db.sql, org, '2026-11'), 12, 'refused reports add nothing');
    client.close();
  } finally {
    await fx.close();
  }
});
