/** Quota: limits, reported usage, the quota_limited flag and its change-log entries (real Postgres). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { bootstrap } from '../../../src/control-plane/bootstrap.js';
import { testConfig } from '../../../src/config.js';
import { flagRequestUsage, recordFlagRequestUsage, refreshAllQuotas, setMonthlyFlagRequestLimit, usagePeriod } from '../../../src/control-plane/quota/service.js';

let db: TestDatabase;
let org: number;
before(async () => {
  db = await createTestDatabase();
  org = (await bootstrap(db.sql, testConfig())).organizationId;
});
after(async () => { await db.drop(); });

async function orgChanges(): Promise<{ quota_limited: boolean; monthly_flag_requests_limit: number | null }[]> {
  const rows = await db.sql<{ payload: { quota_limited: boolean; monthly_flag_requests_limit: number | null } }[]>`
    SELECT payload FROM change_log WHERE kind = 'organization' AND entity_id = ${String(org)} ORDER BY revision`;
  return rows.map((r) => r.payload);
}

test('usage below the limit keeps serving; reaching it marks quota_limited and publishes it', async () => {
  const now = new Date('2026-11-10T00:00:00Z');
  const period = usagePeriod(now);
  assert.equal(period, '2026-11');
  let state = await setMonthlyFlagRequestLimit(db.sql, org, 100, now);
  assert.deepEqual([state.monthly_flag_requests_limit, state.quota_limited], [100, false]);
  await recordFlagRequestUsage(db.sql, new Map([[org, 60]]), period);
  assert.equal((await orgChanges()).at(-1)!.quota_limited, false);
  await recordFlagRequestUsage(db.sql, new Map([[org, 40], [999_999, 5]]), period);
  assert.equal(await flagRequestUsage(db.sql, org, period), 100);
  assert.equal((await orgChanges()).at(-1)!.quota_limited, true, 'the flip is in the change log');
  state = await setMonthlyFlagRequestLimit(db.sql, org, 1000, now);
  assert.equal(state.quota_limited, false, 'raising the limit lifts it');
  assert.equal((await orgChanges()).at(-1)!.quota_limited, false);
});

test('a new month lifts the limit; clearing the limit means unlimited', async () => {
  const nov = new Date('2026-11-20T00:00:00Z');
  await setMonthlyFlagRequestLimit(db.sql, org, 10, nov);
  await recordFlagRequestUsage(db.sql, new Map([[org, 10_000]]), usagePeriod(nov));
  assert.equal((await orgChanges()).at(-1)!.quota_limited, true);
  await refreshAllQuotas(db.sql, new Date('2026-12-01T00:00:01Z'));
  assert.equal((await orgChanges()).at(-1)!.quota_limited, false);
  await setMonthlyFlagRequestLimit(db.sql, org, null, nov);
  const last = (await orgChanges()).at(-1)!;
  assert.deepEqual([last.monthly_flag_requests_limit, last.quota_limited], [null, false]);
});

test('unknown organization is an error', async () => {
  await assert.rejects(setMonthlyFlagRequestLimit(db.sql, 424242, 5), /no organization/);
});
