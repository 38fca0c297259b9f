/**
 * The sizes of one LMDB environment for `/metrics` (heap, LMDB file size and
 * mapped bytes reported): the data file on disk, the map reserved for it, and how much of that
 * map is resident in this process now (falls after bulk work: memory/release.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RootDatabase } from 'lmdb';
import { mappedResidentBytes } from '../memory/mapped-pages.js';

/** How long one read of /proc/self/smaps answers for every environment of a /metrics scrape (ms). */
export const SMAPS_REUSE_MS = 500;

/** Sizes in bytes of one environment. */
export interface EnvironmentFigures {
  /** `data.mdb` on disk. */
  fileBytes: number;
  /** Map size reserved (address space). */
  mapBytes: number;
  /** Pages of the file mapped into this process (part of RSS); 0 where /proc cannot say. */
  residentBytes: number;
}

/** {@link EnvironmentFigures} of the environment `root` opened on directory `dir`. Never throws. */
export function environmentFigures(dir: string, root: RootDatabase): EnvironmentFigures {
  const file = path.resolve(dir, 'data.mdb');
  let fileBytes = 0;
  try { fileBytes = fs.statSync(file).size; } catch { fileBytes = 0; }
  let mapBytes = 0;
  try { mapBytes = Number((root.getStats() as { mapSize?: number }).mapSize ?? 0); } catch { mapBytes = 0; }
  return { fileBytes, mapBytes, residentBytes: mappedResidentBytes([file], SMAPS_REUSE_MS).get(file) ?? 0 };
}
