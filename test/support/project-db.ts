/**
 * A file's own test database with one seeded organization and project: created in a `before`
 * hook and dropped in an `after` hook of the calling file. Read `db` and `projectId` inside tests
 * (they are set once the `before` hook ran).
 */
import { after, before } from 'node:test';
import { createTestDatabase, type TestDatabase } from './db.js';
import { seedOrganization, seedProject } from './seed.js';

/** What {@link useProjectDatabase} fills in before the file's tests. */
export interface ProjectDatabase {
  db: TestDatabase;
  projectId: number;
}

/** Registers the hooks; returns the object they fill in. */
export function useProjectDatabase(): ProjectDatabase {
  const it = {} as ProjectDatabase;
  before(async () => {
    it.db = await createTestDatabase();
    it.projectId = (await seedProject(it.db.sql, await seedOrganization(it.db.sql))).id;
  });
  after(async () => { await it.db?.drop(); });
  return it;
}
