/**
 * Prometheus text for the node's sync status (DESIGN.md "Processes": `GET /metrics`). The HTTP
 * layer appends this to its own metrics; names are stable (dashboards use them).
 */
import type { SyncState } from './state.js';

/**
 * Renders `state` (and readiness = a complete snapshot has been applied) in Prometheus text
 * exposition format 0.0.4. Timestamps are in seconds since the epoch; lag is in revisions.
 */
export function renderSyncMetrics(state: SyncState, ready: boolean): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'gauge' | 'counter', help: string, value: number): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  };
  metric('switchyard_node_ready', 'gauge', '1 once a complete snapshot has been applied.', ready ? 1 : 0);
  metric('switchyard_node_sync_connected', 'gauge', '1 while a Watch stream to the control plane is delivering.', state.connected ? 1 : 0);
  metric('switchyard_node_sync_revision', 'gauge', 'Change-log revision applied to the local store.', state.revision);
  metric('switchyard_node_sync_control_plane_revision', 'gauge', 'Latest change-log revision reported by the control plane.', state.controlPlaneRevision);
  metric('switchyard_node_sync_lag_revisions', 'gauge', 'Control-plane revision minus applied revision.', state.lag);
  metric('switchyard_node_sync_last_change_timestamp_seconds', 'gauge', 'When the last change or snapshot was applied (0 = never).',
    state.lastChangeAtMs === null ? 0 : state.lastChangeAtMs / 1000);
  metric('switchyard_node_sync_snapshotting', 'gauge', '1 while a snapshot is being staged.', state.snapshotting ? 1 : 0);
  metric('switchyard_node_sync_snapshots_applied_total', 'counter', 'Snapshots swapped in since start.', state.snapshotsApplied);
  metric('switchyard_node_sync_snapshots_resumed_total', 'counter', 'Snapshots continued from a staged part after a dropped stream or a restart.', state.snapshotsResumed);
  metric('switchyard_node_sync_streams_opened_total', 'counter', 'Watch streams opened since start (reconnects + 1).', state.streamsOpened);
  metric('switchyard_node_sync_skipped_changes_total', 'counter', 'Changes skipped because they could not be decoded or applied (each logged with its revision).', state.skippedChanges);
  metric('switchyard_node_sync_last_skipped_revision', 'gauge', 'Revision of the last skipped change (0 = none).', state.lastSkippedRevision);
  return `${lines.join('\n')}\n`;
}
