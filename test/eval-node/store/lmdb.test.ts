/** The node's LMDB store on a real LMDB environment in a temporary directory. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '../../support/wait.js';
import { openNodeStore, StoreStateError, type StoreChange, type WritableNodeStore } from '../../../src/eval-node/store/lmdb.js';

const project = (id: number, token: string) => ({ id, organization_id: 1, name: `p${id}`, api_token: token, timezone: 'UTC' });
const flag = (id: number, projectId: number, extra: Record<string, unknown> = {}) => ({ id, team_id: projectId, key: `f${id}`, deleted: false, active: true, version: 1, ...extra });
const up = (kind: string, entityId: string | number, projectId: number | null, payload: unknown): StoreChange => ({ kind, entityId: String(entityId), projectId, op: 'upsert', payload });
const del = (kind: string, entityId: string | number, projectId: number | null): StoreChange => ({ kind, entityId: String(entityId), projectId, op: 'delete', payload: null });

async function withStore(fn: (s: WritableNodeStore, dir: string) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-lmdb-'));
  const s = openNodeStore(dir);
  try {
    await fn(s, dir);
  } finally {
    await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function snapshot(s: WritableNodeStore, revision: number, changes: StoreChange[]): Promise<void> {
  await s.beginSnapshot(revision);
  await s.stageSnapshot(changes);
  await s.commitSnapshot(revision);
}

const base: StoreChange[] = [
  up('organization', 1, null, { id: 1, name: 'o', monthly_flag_requests_limit: null, quota_limited: false }),
  up('project', 1, 1, project(1, 'phc_one')),
  up('project', 2, 2, project(2, 'phc_two')),
  up('feature_flag', 10, 1, flag(10, 1)),
  up('feature_flag', 11, 1, flag(11, 1)),
  up('feature_flag', 20, 2, flag(20, 2)),
  up('cohort', 5, 1, { id: 5, project_id: 1, name: 'c', filters: {}, is_static: false, deleted: false }),
  up('group_type_mapping', '1:0', 1, { project_id: 1, group_type: 'company', group_type_index: 0 }),
  up('personal_api_key', 'k1', null, { id: 'k1', organization_id: 1, secure_value: 'sha256$aa', scopes: ['feature_flag:read'], scoped_teams: [] }),
];

test('an empty store serves nothing and is not ready', async () => {
  await withStore(async (s) => {
    assert.equal(s.revision(), 0);
    assert.equal(s.hasCompleteSnapshot(), false);
    assert.equal(s.projectByToken('phc_one'), undefined);
    assert.deepEqual(s.definitions(1), { revision: 0, flags: [], cohorts: [], groupTypeMapping: {} });
  });
});

test('a committed snapshot serves every index and sets revision and the marker together', async () => {
  await withStore(async (s) => {
    await s.beginSnapshot(9);
    await s.stageSnapshot(base);
    assert.equal(s.projectByToken('phc_one'), undefined, 'staged data is invisible');
    assert.equal(s.revision(), 0);
    await s.commitSnapshot(9);
    assert.equal(s.revision(), 9);
    assert.equal(s.hasCompleteSnapshot(), true);
    assert.deepEqual(s.projectByToken('phc_one'), project(1, 'phc_one'));
    assert.deepEqual(s.project(2), project(2, 'phc_two'));
    assert.equal(s.organization(1)?.name, 'o');
    assert.equal(s.personalApiKeyByHash('sha256$aa')?.id, 'k1');
    const d = s.definitions(1);
    assert.deepEqual(d.flags.map((f) => f.id), [10, 11]);
    assert.deepEqual(d.cohorts.map((c) => c.id), [5]);
    assert.deepEqual(d.groupTypeMapping, { 0: 'company' });
    assert.equal(d.revision, 9);
  });
});

const tail: { name: string; changes: StoreChange[]; check: (s: WritableNodeStore) => void; touched: (number | null)[] }[] = [
  {
    name: 'a new project API token replaces the old one',
    changes: [up('project', 1, 1, project(1, 'phc_new'))],
    check: (s) => { assert.equal(s.projectByToken('phc_one'), undefined); assert.equal(s.projectByToken('phc_new')?.id, 1); },
    touched: [1],
  },
  {
    name: 'a flag upserted with deleted: true disappears',
    changes: [up('feature_flag', 10, 1, flag(10, 1, { deleted: true }))],
    check: (s) => assert.deepEqual(s.definitions(1).flags.map((f) => f.id), [11]),
    touched: [1],
  },
  {
    name: 'a soft-deleted flag that is restored comes back',
    changes: [up('feature_flag', 10, 1, flag(10, 1, { deleted: true })), up('feature_flag', 10, 1, flag(10, 1, { version: 3 }))],
    check: (s) => assert.equal(s.definitions(1).flags.find((f) => f.id === 10)?.version, 3),
    touched: [1],
  },
  {
    name: 'a delete op removes the entity and its index entries',
    changes: [del('personal_api_key', 'k1', null), del('cohort', 5, 1)],
    check: (s) => { assert.equal(s.personalApiKeyByHash('sha256$aa'), undefined); assert.deepEqual(s.definitions(1).cohorts, []); },
    touched: [null, 1],
  },
  {
    name: 'a rotated key hash resolves only under the new hash',
    changes: [up('personal_api_key', 'k1', null, { id: 'k1', organization_id: 1, secure_value: 'sha256$bb', scopes: [], scoped_teams: [2] })],
    check: (s) => { assert.equal(s.personalApiKeyByHash('sha256$aa'), undefined); assert.deepEqual(s.personalApiKeyByHash('sha256$bb')?.scoped_teams, [2]); },
    touched: [null],
  },
  {
    name: 'an organization change touches no project',
    changes: [up('organization', 1, null, { id: 1, name: 'o', monthly_flag_requests_limit: 1000, quota_limited: true })],
    check: (s) => assert.equal(s.organization(1)?.quota_limited, true),
    touched: [null],
  },
  {
    name: 'deleting an unknown entity is harmless',
    changes: [del('feature_flag', 999, 1)],
    check: (s) => assert.deepEqual(s.definitions(1).flags.map((f) => f.id), [10, 11]),
    touched: [1],
  },
];

const person = (id: string, ids: string[], props: Record<string, unknown> = {}) => up('person', id, 1, { id, project_id: 1, distinct_ids: ids, properties: props });
const override = (personId: string, key: string, hash: string) =>
  up('hash_key_override', `1:${personId}:${key}`, 1, { project_id: 1, person_id: personId, feature_flag_key: key, hash_key: hash });

tail.push(
  {
    name: 'a person is found by each distinct id; capture changes touch no project',
    changes: [person('pa', ['a1', 'a2'], { plan: 'pro' })],
    check: (s) => {
      assert.equal(s.personByDistinctId(1, 'a2')?.properties.plan, 'pro');
      assert.equal(s.personByDistinctId(2, 'a2'), undefined, 'project-scoped');
      assert.equal(s.definitions(1).revision, 9, 'definitions untouched');
    },
    touched: [],
  },
  {
    name: 'a merge moves distinct ids to the surviving person even when the delete comes last',
    changes: [person('pa', ['a1']), person('pb', ['b1']), person('pa', ['a1', 'b1']), del('person', 'pb', 1)],
    check: (s) => { assert.equal(s.personByDistinctId(1, 'b1')?.id, 'pa'); assert.equal(s.personByDistinctId(1, 'a1')?.id, 'pa'); },
    touched: [],
  },
  {
    name: 'a distinct id dropped from a person no longer resolves',
    changes: [person('pa', ['a1', 'a2']), person('pa', ['a1'])],
    check: (s) => { assert.equal(s.personByDistinctId(1, 'a2'), undefined); assert.equal(s.personByDistinctId(1, 'a1')?.id, 'pa'); },
    touched: [],
  },
  {
    name: 'an update that keeps the distinct ids keeps every one resolving, with the new properties',
    changes: [person('pa', ['a1', 'a2'], { plan: 'free' }), person('pa', ['a1', 'a2'], { plan: 'pro' })],
    check: (s) => { assert.equal(s.personByDistinctId(1, 'a1')?.properties.plan, 'pro'); assert.equal(s.personByDistinctId(1, 'a2')?.id, 'pa'); },
    touched: [],
  },
  {
    name: 'a person updated with the ids it had takes back an id another person claimed earlier in the batch',
    changes: [person('pa', ['a1', 'x']), person('pb', ['b1', 'x']), person('pa', ['a1', 'x'], { v: 2 })],
    check: (s) => { assert.equal(s.personByDistinctId(1, 'x')?.id, 'pa'); assert.equal(s.personByDistinctId(1, 'b1')?.id, 'pb'); },
    touched: [],
  },
  {
    name: 'a person whose distinct ids change and who moves project is indexed under the new ones only',
    changes: [person('pa', ['a1', 'a2']), up('person', 'pa', 2, { id: 'pa', project_id: 2, distinct_ids: ['a1'], properties: {} })],
    check: (s) => { assert.equal(s.personByDistinctId(1, 'a1'), undefined); assert.equal(s.personByDistinctId(1, 'a2'), undefined); assert.equal(s.personByDistinctId(2, 'a1')?.id, 'pa'); },
    touched: [],
  },
  {
    name: 'groups by type index and key',
    changes: [up('group', '1:0:acme', 1, { project_id: 1, group_type_index: 0, group_key: 'acme', properties: { size: 5 } })],
    check: (s) => { assert.deepEqual(s.group(1, 0, 'acme')?.properties, { size: 5 }); assert.equal(s.group(1, 1, 'acme'), undefined); },
    touched: [],
  },
  {
    name: 'hash-key overrides per person; a delete removes one',
    changes: [override('pa', 'f1', 'h1'), override('pa', 'f2', 'h2'), override('pa', 'f1', 'h1b'), del('hash_key_override', '1:pa:f2', 1)],
    check: (s) => { assert.deepEqual(s.hashKeyOverrides(1, 'pa'), { f1: 'h1b' }); assert.deepEqual(s.hashKeyOverrides(1, 'pb'), {}); },
    touched: [],
  },
);

for (const c of tail) {
  test(`applyBatch: ${c.name}`, async () => {
    await withStore(async (s) => {
      await snapshot(s, 9, base);
      let seen: { revision: number; ids: Set<number | null> } | null = null;
      s.onApplied((revision, ids) => { seen = { revision, ids }; });
      await s.applyBatch(c.changes, 12);
      assert.equal(s.revision(), 12);
      c.check(s);
      assert.deepEqual(seen, { revision: 12, ids: new Set(c.touched) });
    });
  });
}

test('definitions are cached until a change touches that project', async () => {
  await withStore(async (s) => {
    await snapshot(s, 9, base);
    const one = s.definitions(1);
    const two = s.definitions(2);
    assert.equal(s.definitions(1), one, 'cache hit');
    await s.applyBatch([up('feature_flag', 20, 2, flag(20, 2, { version: 2 }))], 10);
    assert.equal(s.definitions(1), one, 'other project untouched');
    assert.notEqual(s.definitions(2), two);
    assert.equal(s.definitions(2).revision, 10);
    assert.equal(s.definitions(2).flags[0]!.version, 2);
  });
});

test('a second snapshot replaces the state wholesale; an aborted one changes nothing', async () => {
  await withStore(async (s, dir) => {
    await snapshot(s, 9, base);
    await s.beginSnapshot(20);
    await s.stageSnapshot([up('project', 3, 3, project(3, 'phc_three'))]);
    await s.abortSnapshot();
    assert.equal(s.revision(), 9);
    assert.equal(s.projectByToken('phc_three'), undefined);
    assert.equal(s.projectByToken('phc_one')?.id, 1);
    await assert.rejects(s.commitSnapshot(20), StoreStateError);

    const touched: Set<number | null>[] = [];
    s.onApplied((_r, ids) => touched.push(ids));
    await snapshot(s, 30, [up('project', 3, 3, project(3, 'phc_three')), up('feature_flag', 31, 3, flag(31, 3))]);
    assert.equal(s.revision(), 30);
    assert.equal(s.projectByToken('phc_one'), undefined, 'entities absent from the snapshot are gone');
    assert.deepEqual(s.definitions(1).flags, []);
    assert.equal(s.definitions(3).flags[0]!.id, 31);
    assert.deepEqual(touched[0], new Set([3, 1, 2, null]), 'old and new projects plus cluster-wide');

    const ro = openNodeStore(dir, { readOnly: true });
    try {
      assert.equal(ro.revision(), 30);
      assert.equal(ro.projectByToken('phc_three')?.id, 3);
      assert.equal(ro.personalApiKeyByHash('sha256$aa'), undefined);
    } finally {
      await ro.close();
    }
  });
});

test('a read-only store sees the writer\'s commits and refuses writes', async () => {
  await withStore(async (s, dir) => {
    await snapshot(s, 9, base);
    const ro = openNodeStore(dir, { readOnly: true });
    try {
      assert.equal(ro.definitions(1).flags.length, 2);
      await s.applyBatch([up('feature_flag', 12, 1, flag(12, 1))], 10);
      // A reader looks for newer commits at most every READ_REFRESH_MS.
      await waitFor('reader at revision 10', () => ro.revision() === 10);
      assert.equal(ro.definitions(1).flags.length, 3, 'cache revalidated by the project revision');
      assert.equal(ro.projectByToken('phc_one')?.id, 1);
      await s.applyBatch([up('project', 1, 1, project(1, 'phc_rotated'))], 11);
      await waitFor('reader at revision 11', () => ro.revision() === 11);
      assert.equal(ro.projectByToken('phc_one'), undefined, 'memoised lookup dropped when tenancy moved');
      assert.equal(ro.projectByToken('phc_rotated')?.id, 1);
      assert.throws(() => ro.applyBatch([], 12), StoreStateError);
    } finally {
      await ro.close();
    }
  });
});

test('a superseded generation is deleted in the background while batches keep applying', async () => {
  await withStore(async (s, dir) => {
    const many = Array.from({ length: 12_000 }, (_, i) => up('feature_flag', i + 1, 1, flag(i + 1, 1)));
    await snapshot(s, 5, [up('project', 1, 1, project(1, 'phc_one')), ...many]);
    await snapshot(s, 6, [up('project', 1, 1, project(1, 'phc_one'))]);
    await s.applyBatch([up('feature_flag', 1, 1, flag(1, 1))], 7);
    assert.deepEqual(s.definitions(1).flags.map((f) => f.id), [1]);
    const { open } = await import('lmdb');
    const raw = open({ path: dir, maxDbs: 16, readOnly: true });
    const entities = raw.openDB({ name: 'entities', encoding: 'msgpack' });
    try {
      await waitFor('old generations gone', () => {
        entities.resetReadTxn();
        return entities.getKeysCount({ end: [2] }) === 0;
      });
    } finally {
      await raw.close();
    }
  });
});

test('a staged snapshot survives a reopen with the cursor of its last chunk, continues, and swaps in whole', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-lmdb-'));
  try {
    let s = openNodeStore(dir);
    await snapshot(s, 3, [base[0]!, base[1]!, up('feature_flag', 10, 1, flag(10, 1, { key: 'old' }))]);
    await s.beginSnapshot(9);
    assert.deepEqual(s.pendingSnapshot(), { revision: 9, cursor: null });
    // Chunks carry entities new to the staged generation; each records its cursor after them.
    await s.stageSnapshot(base.slice(0, 3), Buffer.from('cursor-1'));
    await s.stageSnapshot(base.slice(3, 5), Buffer.from('cursor-2'));
    await s.close();

    s = openNodeStore(dir);
    assert.deepEqual(s.pendingSnapshot(), { revision: 9, cursor: Buffer.from('cursor-2') }, 'the last chunk staged');
    assert.equal(s.revision(), 3, 'the live state is the previous one');
    assert.equal(s.definitions(1).flags[0]!.key, 'old');
    assert.equal(s.projectByToken('phc_two'), undefined, 'staged entities stay invisible');
    await s.stageSnapshot(base.slice(5), Buffer.from('cursor-3'));
    await s.stageSnapshot([up('feature_flag', 11, 1, flag(11, 1, { key: 'replayed' })), del('feature_flag', 20, 2)]);
    await s.commitSnapshot(12);
    assert.equal(s.pendingSnapshot(), null);
    assert.equal(s.revision(), 12);
    assert.deepEqual(s.definitions(1).flags.map((f) => f.key), ['f10', 'replayed']);
    assert.deepEqual(s.definitions(2).flags, []);
    assert.equal(s.projectByToken('phc_two')?.id, 2, 'entities of the chunks staged before the reopen are live');
    assert.equal(s.personalApiKeyByHash('sha256$aa')?.id, 'k1');
    await s.close();

    s = openNodeStore(dir);
    assert.equal(s.pendingSnapshot(), null, 'nothing pending after the swap');
    assert.equal(s.revision(), 12);
    await s.beginSnapshot(20);
    await s.stageSnapshot(base.slice(0, 2), Buffer.from('c'));
    await s.abortSnapshot();
    assert.equal(s.pendingSnapshot(), null, 'an aborted snapshot is forgotten');
    await s.close();
    s = openNodeStore(dir);
    assert.equal(s.pendingSnapshot(), null);
    assert.equal(s.projectByToken('phc_one')?.id, 1);
    await s.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
