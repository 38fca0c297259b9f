/**
 * Filesystem locations inside the installed package.
 *
 * Compiled code lives in `dist/`, while non-TypeScript assets (SQL migrations, the gRPC
 * contract) stay in the source tree; this module resolves both from the package root so
 * that `node dist/src/cli.js` works from any working directory.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Absolute path of the package root (the folder holding package.json). dist/src/paths.js → ../.. */
export const PACKAGE_ROOT: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Absolute path of the numbered SQL migrations (src/control-plane/db/migrations). */
export const MIGRATIONS_DIR: string = path.join(PACKAGE_ROOT, 'src', 'control-plane', 'db', 'migrations');

/** Absolute path of the gRPC contract. */
export const PROTO_FILE: string = path.join(PACKAGE_ROOT, 'proto', 'switchyard.proto');

/** Absolute path of the compiled Piscina worker entry points (dist/workers). */
export const WORKERS_DIR: string = path.join(PACKAGE_ROOT, 'dist', 'workers');
