import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderSyncMetrics } from '../../../src/eval-node/sync/metrics.js';
import type { SyncState } from '../../../src/eval-node/sync/client.js';

const state: SyncState = {
  connected: true, revision: 40, controlPlaneRevision: 42, lag: 2, lastChangeAtMs: 1_700_000_000_500,
  snapshotting: false, snapshotStaged: 0, snapshotsApplied: 1, snapshotsResumed: 1, streamsOpened: 3, lastError: null,
  skippedChanges: 2, lastSkippedRevision: 39,
};

test('renderSyncMetrics prints one sample per metric with HELP and TYPE', () => {
  const text = renderSyncMetrics(state, true);
  const samples = Object.fromEntries(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(' ') as [string, string]));
  assert.deepEqual(samples, {
    switchyard_node_ready: '1',
    switchyard_node_sync_connected: '1',
    switchyard_node_sync_revision: '40',
    switchyard_node_sync_control_plane_revision: '42',
    switchyard_node_sync_lag_revisions: '2',
    switchyard_node_sync_last_change_timestamp_seconds: '1700000000.5',
    switchyard_node_sync_snapshotting: '0',
    switchyard_node_sync_snapshots_applied_total: '1',
    switchyard_node_sync_snapshots_resumed_total: '1',
    switchyard_node_sync_streams_opened_total: '3',
    switchyard_node_sync_skipped_changes_total: '2',
    switchyard_node_sync_last_skipped_revision: '39',
  });
  assert.match(text, /# TYPE switchyard_node_sync_snapshots_applied_total counter/);
});
