/**
 * A person's index fields read from its payload bytes without decoding the rest
 * (contract/person-index-fields.ts): equal to a full decode's fields for the control plane's own
 * encoding, for other key orders and for maps of over 15 keys; null for anything that is not a
 * map holding both with the right types, and for damaged bytes (then the caller decodes whole).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodePayload, decodePayload } from '../../src/contract/payload.js';
import { personIndexFields } from '../../src/contract/person-index-fields.js';
import { personEntity } from '../../src/contract/entities.js';

const fieldsOf = (v: unknown) => { const o = v as { project_id: unknown; distinct_ids: unknown }; return { project_id: o.project_id, distinct_ids: o.distinct_ids }; };

test('the fields equal a full decode\'s, whatever the key order and map size', () => {
  const properties = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`$p${i}`, i % 2 ? `v${i}` : { nested: [i, { deep: true }] }]));
  const cases: unknown[] = [
    personEntity({ uuid: '0190a8c2-0000-7000-8000-000000000001', project_id: 7, properties }, ['b', 'a', 'ü-😀', 'x'.repeat(300)]),
    { properties, id: 'p', distinct_ids: ['d1'], project_id: 123456789 },
    Object.fromEntries([...Array.from({ length: 20 }, (_, i) => [`k${i}`, i]), ['distinct_ids', []], ['project_id', 1]]),
    { id: 'p', project_id: 2, distinct_ids: ['a'], properties: { __proto__: 'kept', ['constructor']: 1 } },
  ];
  for (const v of cases) {
    const bytes = encodePayload(v);
    assert.deepEqual(personIndexFields(bytes), fieldsOf(decodePayload(bytes)));
  }
});

test('null for bytes that are not a person map with both fields of the right types, or are damaged', () => {
  const good = encodePayload({ id: 'p', project_id: 1, distinct_ids: ['a', 'b'], properties: { x: 1 } });
  const nulls: Uint8Array[] = [
    new Uint8Array(0),
    encodePayload(['project_id', 1]),
    encodePayload('a string'),
    encodePayload({ id: 'p', distinct_ids: ['a'] }),
    encodePayload({ id: 'p', project_id: 1 }),
    encodePayload({ project_id: '1', distinct_ids: ['a'] }),
    encodePayload({ project_id: 1, distinct_ids: 'a' }),
    encodePayload({ project_id: 1, distinct_ids: ['a', 2] }),
    encodePayload({ project_id: 1, distinct_ids: [['nested']] }),
    good.subarray(0, 12),
  ];
  for (const bytes of nulls) assert.equal(personIndexFields(bytes), null, Buffer.from(bytes).toString('hex'));
  // Bytes after both fields are not read (nor checked: the control plane encoded them, as for a
  // snapshot chunk's persons), so a cut after them still gives the fields.
  assert.deepEqual(personIndexFields(good.subarray(0, good.length - 8)), { project_id: 1, distinct_ids: ['a', 'b'] });
});
