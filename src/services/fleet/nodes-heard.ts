import { isDeepStrictEqual } from "node:util";
import type { Inventory } from "../../protocol/agent-protocol.js";
import { touchNode, type StoredNode } from "../../store/fleet-rows.js";
import type { Store } from "../../store/open-store.js";

/**
 * When each node was last heard by this server, to the millisecond. The
 * store's `last_seen_at` is written only every third of the heartbeat
 * deadline (or when the address or inventory changed): 500 nodes beating
 * every 2 s wrote 250 rows a second that said nothing new, and every write
 * made the lists built from the fleet stale. Other servers sharing the store
 * read the coarse value, a third of the deadline behind at most.
 */
export class NodesHeard {
  private readonly heardAt = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly heartbeatDeadlineMs: number,
    private readonly startedAtMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * Records a beat; writes the node's row only when what it shows changed or the stored time grew coarse.
   * Answers whether the beat changed what the reconciler decides on: the node's address or inventory,
   * or its state (a node silent past the deadline is back; the first beat since this server started,
   * which may close the settling window).
   */
  async record(node: StoredNode, beat: { address: string; inventory?: Inventory | undefined }): Promise<boolean> {
    const nowMs = this.now();
    const silentMs = nowMs - this.lastSeenMs(node);
    this.heardAt.set(node.name, nowMs);
    const storedMs = Date.parse(node.last_seen_at);
    const address = beat.address !== node.address ? beat.address : undefined;
    const inventory = beat.inventory !== undefined && (node.inventoryUnreadable || !isDeepStrictEqual(beat.inventory, node.inventory)) ? beat.inventory : undefined;
    // Written too when the stored time is from before this server started: whether every node has
    // reported since the start (which ends the settling window) is read from the store.
    const stale = !(nowMs - storedMs < this.heartbeatDeadlineMs / 3) || storedMs < this.startedAtMs;
    const returned = !(silentMs <= this.heartbeatDeadlineMs) || storedMs < this.startedAtMs;
    if (address === undefined && inventory === undefined && !stale) return returned;
    await touchNode(this.store.db, node.name, { address: address ?? node.address, last_seen_at: new Date(nowMs).toISOString(), inventory });
    return returned || address !== undefined || inventory !== undefined;
  }

  /** When a node was last heard from: by this server (in memory) or, as the store has it, by any. */
  lastSeenMs(node: Pick<StoredNode, "name" | "last_seen_at">): number {
    const stored = Date.parse(node.last_seen_at);
    const heard = this.heardAt.get(node.name);
    return heard !== undefined && (Number.isNaN(stored) || heard > stored) ? heard : stored;
  }

  /** The stored text as it is (whatever it holds) unless this server heard the node later. */
  lastSeenText(node: Pick<StoredNode, "name" | "last_seen_at">): string {
    const heard = this.heardAt.get(node.name);
    return heard !== undefined && heard === this.lastSeenMs(node) && heard !== Date.parse(node.last_seen_at) ? new Date(heard).toISOString() : node.last_seen_at;
  }

  /** The node as shown: last seen when this server last heard it, if that is later than the store has it. */
  seen<Node extends Pick<StoredNode, "name" | "last_seen_at">>(node: Node): Node {
    const lastSeen = this.lastSeenText(node);
    return lastSeen === node.last_seen_at ? node : { ...node, last_seen_at: lastSeen };
  }
}
