/**
 * A node with no store installs the control plane's snapshot image (proto/switchyard.proto
 * `SnapshotImage`; control-plane/snapshot-image) before it opens its store, then watches from
 * the image's revision: a file copy instead of a Watch snapshot entity by entity.
 *
 * The file is received into a temporary directory beside the store, checked (the size the
 * header announced, LMDB's meta pages: store/integrity.ts `checkLmdbHeader`), flushed to disk,
 * and only then renamed to `<store>/data.mdb`. Any failure (no image kept, not complete yet,
 * another store format, a dropped connection, a bad file) leaves no file behind and returns
 * null: the node then bootstraps through the Watch snapshot as before.
 *
 * With several control planes (control-planes.ts) the current one is asked first; one that
 * cannot be reached (UNAVAILABLE) is reported failed and the next is asked, each at most once.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import { ClientsByAddress, ControlPlanes } from './control-planes.js';
import { clusterTokenMetadata } from '../../contract/metadata.js';
import { STORE_FORMAT } from '../../contract/store-format.js';
import { checkLmdbHeader } from '../store/integrity.js';
import { prepareLmdbDir, restrictLmdbFiles } from '../store/files.js';

/** Longest an image transfer may take before the node gives up on it, in ms. */
export const IMAGE_TIMEOUT_MS = 10 * 60_000;
/**
 * HTTP/2 flow-control window of the image call, in bytes: at the 64 KiB default the sender waits
 * for a window update every 64 KiB (500 MB over loopback: 2.0 s, at 16 MiB 1.2 s).
 */
export const IMAGE_FLOW_CONTROL_WINDOW = 16 * 1024 * 1024;

/** `SnapshotImageChunk` as proto-loader decodes it (int64 as decimal strings). */
interface ImageChunkIn { format: number; revision: string; total_bytes: string; data: Buffer }

/** Options of {@link installSnapshotImage}. */
export interface ImageOptions {
  /** A SWITCHYARD_CONTROL_PLANE value, or the node's shared {@link ControlPlanes}. */
  controlPlane: string | ControlPlanes;
  clusterToken: string;
  nodeId: string;
  /** The store directory (it holds no data.mdb yet). */
  dir: string;
  log: Logger;
  timeoutMs?: number;
}

/**
 * Fetches the image into `<dir>/data.mdb`. @returns its revision and size, or null when the node
 * must take the Watch snapshot instead (the reason is logged). Never throws.
 */
export async function installSnapshotImage(o: ImageOptions): Promise<{ revision: number; bytes: number } | null> {
  const planes = typeof o.controlPlane === 'string' ? new ControlPlanes(o.controlPlane) : o.controlPlane;
  const clients = new ClientsByAddress(planes, { 'grpc-node.flow_control_window': IMAGE_FLOW_CONTROL_WINDOW });
  try {
    for (let i = 0; i < planes.addresses.length; i++) {
      const { address, client } = clients.get();
      const got = await installFrom(o, client);
      if (got !== UNREACHABLE) return got;
      clients.failed(address);
    }
    return null;
  } finally {
    clients.close();
  }
}

/** {@link installFrom}'s answer when the control plane could not be reached (the next may be asked). */
const UNREACHABLE = Symbol('unreachable');

/** One attempt at `client`'s control plane (see {@link installSnapshotImage}). */
async function installFrom(o: ImageOptions, client: grpc.Client): Promise<{ revision: number; bytes: number } | null | typeof UNREACHABLE> {
  const log = o.log.child({ component: 'sync' });
  const target = path.join(o.dir, 'data.mdb');
  const tmp = `${o.dir}.image-${process.pid}`;
  const started = performance.now();
  try {
    if (fs.existsSync(target)) return null;
    fs.rmSync(tmp, { recursive: true, force: true });
    prepareLmdbDir(tmp);
    const call = (client as unknown as { SnapshotImage(...a: unknown[]): unknown }).SnapshotImage({ format: STORE_FORMAT, node_id: o.nodeId }, clusterTokenMetadata(o.clusterToken),
      { deadline: Date.now() + (o.timeoutMs ?? IMAGE_TIMEOUT_MS) }) as grpc.ClientReadableStream<ImageChunkIn>;
    const fd = fs.openSync(path.join(tmp, 'data.mdb'), 'w', 0o600);
    let header: { revision: number; bytes: number } | null = null;
    let received = 0;
    try {
      for await (const chunk of call as AsyncIterable<ImageChunkIn>) {
        if (header === null) header = { revision: Number(chunk.revision), bytes: Number(chunk.total_bytes) };
        received += chunk.data.length;
        if (received > header.bytes) throw new Error(`image longer than announced: over ${header.bytes} bytes`);
        for (let off = 0; off < chunk.data.length;) off += fs.writeSync(fd, chunk.data, off);
      }
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    if (header === null || received !== header.bytes || received === 0) throw new Error(`image incomplete: ${received} of ${header?.bytes ?? '?'} bytes`);
    const bad = checkLmdbHeader(tmp);
    if (bad !== null) throw new Error(`image is not a sound LMDB file: ${bad}`);
    prepareLmdbDir(o.dir);
    fs.renameSync(path.join(tmp, 'data.mdb'), target);
    restrictLmdbFiles(o.dir);
    log.info({ revision: header.revision, bytes: header.bytes, ms: Math.round(performance.now() - started) }, 'installed the control plane\'s snapshot image');
    return header;
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === grpc.status.UNAVAILABLE) {
      log.warn({ control_plane: client.getChannel().getTarget(), details: (err as grpc.ServiceError).details }, 'control plane unreachable for the snapshot image');
      return UNREACHABLE;
    }
    if (code === grpc.status.FAILED_PRECONDITION || code === grpc.status.UNIMPLEMENTED) log.info({ reason: (err as Error).message }, 'no snapshot image; bootstrapping through a Watch snapshot');
    else log.warn({ err }, 'snapshot image failed; bootstrapping through a Watch snapshot');
    return null;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
