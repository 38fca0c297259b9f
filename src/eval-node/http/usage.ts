/**
 * Per-organization count of billable /flags requests since the last {@link FlagUsage.takeUsage}
 * (research/posthog-flag-evaluation.md §4, spec/API.md §7–8: the flag quota). Counted: every
 * request that evaluated flags. Not counted: quota-limited answers, `disable_flags` requests and
 * errors. Reporting the counts to the control plane is the sync client's job.
 */
export class FlagUsage {
  private counts = new Map<number, number>();

  /** Counts one request for `organizationId`. */
  add(organizationId: number): void {
    this.counts.set(organizationId, (this.counts.get(organizationId) ?? 0) + 1);
  }

  /** Counts `n` requests for `organizationId` (an IO thread's pushed share). */
  addMany(organizationId: number, n: number): void {
    this.counts.set(organizationId, (this.counts.get(organizationId) ?? 0) + n);
  }

  /** Returns the counts gathered since the previous call and starts over. */
  takeUsage(): Map<number, number> {
    const out = this.counts;
    this.counts = new Map();
    return out;
  }
}
