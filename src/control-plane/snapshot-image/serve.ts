/**
 * The `SnapshotImage` call (proto/switchyard.proto): streams a fresh copy of the control plane's
 * image (replica.ts) to a node that has no store. Per call: a copy of the image into a private
 * temporary directory, then the file in {@link IMAGE_CHUNK_BYTES} slices (the first message
 * with the header: format, revision, total bytes), each written after the previous one drained,
 * then the copy is deleted. At most {@link MAX_CONCURRENT_IMAGES} copies exist at once; further
 * calls wait their turn.
 *
 * Statuses: UNAUTHENTICATED without the cluster token; FAILED_PRECONDITION when this control
 * plane keeps no image, the image is not complete yet, or the node reads another store format
 * (the node then takes the Watch snapshot); INTERNAL when the copy or the read fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log.js';
import { STORE_FORMAT } from '../../contract/store-format.js';
import { hasClusterToken, unauthenticated } from '../grpc/auth.js';
import { Semaphore } from '../grpc/semaphore.js';
import type { ImageReplica } from './replica.js';

/** Bytes of the file per message. */
export const IMAGE_CHUNK_BYTES = 1024 * 1024;
/** Copies of the image that may exist at once (each is the image's size on disk). */
export const MAX_CONCURRENT_IMAGES = 2;

/** `SnapshotImageRequest` as proto-loader decodes it. */
export interface SnapshotImageRequest { format: number; node_id: string }
/** `SnapshotImageChunk` as the handler writes it. */
export interface SnapshotImageChunkOut { format?: number; revision?: string; total_bytes?: string; data: Buffer }

/**
 * The call's handler; `replica()` is the running image or null (none kept, or not started yet).
 * `tmpDir`: where copies are made (default the OS temporary directory; the gRPC server passes
 * the control plane's data dir, the disk that already holds the image).
 */
export function createSnapshotImageHandler(deps: { replica: () => ImageReplica | null; clusterToken: string; log: Logger; tmpDir?: string }):
  grpc.handleServerStreamingCall<SnapshotImageRequest, SnapshotImageChunkOut> {
  const log = deps.log.child({ component: 'snapshot-image' });
  const copies = new Semaphore(MAX_CONCURRENT_IMAGES);
  return (call) => {
    if (!hasClusterToken(call.metadata, deps.clusterToken)) {
      call.emit('error', unauthenticated());
      return;
    }
    const replica = deps.replica();
    const refuse = (details: string): void => { call.emit('error', { code: grpc.status.FAILED_PRECONDITION, details }); };
    if (replica === null) { refuse('this control plane keeps no snapshot image'); return; }
    if (!replica.ready()) { refuse('the snapshot image is not complete yet'); return; }
    if (Number(call.request.format) !== STORE_FORMAT) { refuse(`the snapshot image has store format ${STORE_FORMAT}, the node reads ${call.request.format}`); return; }
    let cancelled = false;
    let onCancel = (): void => {};
    const whenCancelled = new Promise<void>((resolve) => { onCancel = resolve; });
    call.on('cancelled', () => { cancelled = true; onCancel(); });
    void (async () => {
      await copies.acquire();
      let dir: string | null = null;
      try {
        if (cancelled) return;
        dir = fs.mkdtempSync(path.join(deps.tmpDir ?? os.tmpdir(), 'switchyard-image-'));
        const started = performance.now();
        const { revision, bytes } = await replica.copy(dir);
        let first = true;
        for await (const data of fs.createReadStream(path.join(dir, 'data.mdb'), { highWaterMark: IMAGE_CHUNK_BYTES }) as AsyncIterable<Buffer>) {
          if (cancelled) return;
          const msg: SnapshotImageChunkOut = first ? { format: STORE_FORMAT, revision: String(revision), total_bytes: String(bytes), data } : { data };
          first = false;
          if (!call.write(msg)) await Promise.race([once(call, 'drain'), whenCancelled]);
        }
        call.end();
        log.info({ node_id: call.request.node_id || call.getPeer(), revision, bytes, ms: Math.round(performance.now() - started) }, 'snapshot image sent');
      } catch (err) {
        log.warn({ err }, 'snapshot image failed');
        if (!cancelled) call.emit('error', { code: grpc.status.INTERNAL, details: `snapshot image failed: ${(err as Error).message}` });
      } finally {
        if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
        copies.release();
      }
    })();
  };
}
