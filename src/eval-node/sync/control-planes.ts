/**
 * Which control plane a node talks to (DESIGN.md "Scale and the cluster"): the addresses of
 * SWITCHYARD_CONTROL_PLANE in the order given, one of them current. Every gRPC user on the node
 * (Watch, Ingest shipping, usage reports, the snapshot image) asks {@link ControlPlanes.current}
 * and reports a broken call with {@link ControlPlanes.failed}; the first report about the
 * current address moves every user to the next one (round robin), later reports about an
 * address already left change nothing. So when a control plane dies, the first user to notice
 * moves them all, and none waits for its own timeout to find out.
 *
 * {@link ClientsByAddress} keeps one gRPC client per address for one user, with that user's
 * channel options, on a channel of its own (`grpc.use_local_subchannel_pool`): a client whose
 * address failed is closed and made again on next use, so a control plane that comes back is
 * reached at once rather than after grpc-js's own reconnect backoff of the old channel.
 */
import * as grpc from '@grpc/grpc-js';
import { controlPlaneAddresses } from '../../config.js';
import { switchyardService } from '../../contract/loader.js';

/** The node's control-plane addresses and the current one. */
export class ControlPlanes {
  readonly addresses: readonly string[];
  private index = 0;
  /** Moves between addresses since start (metrics, tests). */
  switches = 0;

  /**
   * @param value a SWITCHYARD_CONTROL_PLANE value (config.ts `controlPlaneAddresses`), or the list.
   * @throws Error when it names no address.
   */
  constructor(value: string | readonly string[]) {
    this.addresses = Object.freeze(typeof value === 'string' ? controlPlaneAddresses(value) : [...value]);
    if (this.addresses.length === 0) throw new Error('no control-plane address');
  }

  /** The address to use now. */
  current(): string {
    return this.addresses[this.index]!;
  }

  /** `address` failed: when it is the current one, the next becomes current. Returns the current address. */
  failed(address: string): string {
    if (this.addresses.length > 1 && this.addresses[this.index] === address) {
      this.index = (this.index + 1) % this.addresses.length;
      this.switches++;
    }
    return this.current();
  }
}

/** The generated client (methods are looked up by name). */
export type SwitchyardClient = grpc.Client & Record<string, (...args: never[]) => unknown>;

/** One client per address for one user of {@link ControlPlanes} (see the module doc). */
export class ClientsByAddress {
  private readonly clients = new Map<string, SwitchyardClient>();
  private closed = false;

  /** @param options channel options of this user's clients (keep-alive, message sizes, windows). */
  constructor(readonly planes: ControlPlanes, private readonly options: grpc.ChannelOptions = {}) {}

  /** The current address and its client (made on first use). @throws Error after close(). */
  get(): { address: string; client: SwitchyardClient } {
    if (this.closed) throw new Error('control-plane clients closed');
    const address = this.planes.current();
    let client = this.clients.get(address);
    if (client === undefined) {
      const Service = switchyardService();
      client = new Service(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, ...this.options }) as unknown as SwitchyardClient;
      this.clients.set(address, client);
    }
    return { address, client };
  }

  /** A call to `address` failed: drop its client and move on (ControlPlanes.failed). Returns the address now current. */
  failed(address: string): string {
    const client = this.clients.get(address);
    if (client !== undefined) { this.clients.delete(address); client.close(); }
    return this.planes.failed(address);
  }

  /** Closes every client. */
  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
