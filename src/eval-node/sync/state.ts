/** The Watch client's status as `/metrics` and `/_ready` read it (sync/client.ts keeps it). */
/** Sync status for `/metrics` and `/_ready`. */
export interface SyncState {
  /** A Watch stream is open and has delivered at least one event. */
  connected: boolean;
  /** Revision applied to the store. */
  revision: number;
  /** Latest revision the control plane reported (heartbeats, changes, snapshots). */
  controlPlaneRevision: number;
  /** max(0, controlPlaneRevision − revision), in revisions. */
  lag: number;
  /** Wall-clock time of the last applied change or snapshot, ms since the epoch; null before. */
  lastChangeAtMs: number | null;
  /**
   * Wall-clock time the last Watch event (change, snapshot part or heartbeat) arrived, ms since
   * the epoch; null before the first. The control plane heartbeats every 2 s, so a value much
   * older than that means the node is not hearing its control plane, connected or not.
   */
  lastEventAtMs: number | null;
  /** A snapshot is being staged. */
  snapshotting: boolean;
  /** Entities staged for the snapshot in progress. */
  snapshotStaged: number;
  /** Snapshots swapped in since start. */
  snapshotsApplied: number;
  /** Snapshots continued from a staged part (SnapshotBegin.resumed) since start. */
  snapshotsResumed: number;
  /** Streams opened since start. */
  streamsOpened: number;
  /** Status of the last failed stream, or null. */
  lastError: { code: number; details: string } | null;
  /** Changes skipped since start because they could not be decoded or applied. */
  skippedChanges: number;
  /** Revision of the last skipped change (0 = none). */
  lastSkippedRevision: number;
  /** Address of the control plane the current (or last) stream went to; null before the first. */
  controlPlane: string | null;
  /** Moves to another control-plane address since start (sync/control-planes.ts). */
  failovers: number;
  /** Set while the last control plane tried speaks a protocol version this node refuses (contract/protocol.ts). */
  protocolRefused: { controlPlane: string; protocol: number } | null;
}
