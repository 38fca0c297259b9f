/** Helpers shared by the evaluation tests: vector files and tiny definition builders. */
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import type { FlagDefinition, ProjectDefinitions } from '../../src/evaluation/index.js';

/** Parsed JSON of test/evaluation/vectors/<name> (copied from /work/shared/research/vectors). */
export function loadVector<T = any>(name: string): T {
  return JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'test', 'evaluation', 'vectors', name), 'utf8')) as T;
}

let nextId = 1000;

/** A live flag with the given key and filters; other fields may be overridden. */
export function flag(key: string, filters: FlagDefinition['filters'], extra: Partial<FlagDefinition> = {}): FlagDefinition {
  return { id: nextId++, key, active: true, filters, ...extra };
}

/** A project from flags (plus optional mapping and cohorts). */
export function project(flags: FlagDefinition[], more: Partial<ProjectDefinitions> = {}): ProjectDefinitions {
  return { flags, group_type_mapping: more.group_type_mapping ?? { 0: 'company' }, cohorts: more.cohorts ?? {} };
}
