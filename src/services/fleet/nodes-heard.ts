import { isDeepStrictEqual } from "node:util";
import type { FabricNetwork, Inventory } from "../../protocol/index.js";
import { touchNode, type StoredNode, type Store } from "../../store/index.js";

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
  async record(node: StoredNode, beat: { address: string; inventory?: Inventory | undefined; fabric_network?: FabricNetwork | undefined }): Promise<boolean> {
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
    // Sent on every beat by an agent given --fabric-address; a beat without it (an agent restarted without the flag) clears it.
    const fabricNetwork = isDeepStrictEqual(beat.fabric_network, node.fabricNetwork) ? undefined : (beat.fabric_network ?? null);
    if (address === undefined && inventory === undefined && fabricNetwork === undefined && !stale) return returned;
    await touchNode(this.store.db, node.name, { address: address ?? node.address, last_seen_at: new Date(nowMs).toISOString(), inventory, fabric_network: fabricNetwork });
    return returned || address !== undefined || inventory !== undefined || fabricNetwork !== undefined;
  }

  /** When a node was last heard from: by this server (in memory) or, as the store has it, by any. */
  lastSeenMs(node: Pick<StoredNode, "name" | "last_seen_at">): number {
    const stored = this.storedMs(node.last_seen_at);
    const heard = this.heardAt.get(node.name);
    return heard !== undefined && (Number.isNaN(stored) || heard > stored) ? heard : stored;
  }

  /** The stored text as it is (whatever it holds) unless this server heard the node later. */
  lastSeenText(node: Pick<StoredNode, "name" | "last_seen_at">): string {
    const heard = this.heardAt.get(node.name);
    if (heard === undefined || heard !== this.lastSeenMs(node) || heard === this.storedMs(node.last_seen_at)) return node.last_seen_at;
    return this.isoOf(node.name, heard);
  }

  /**
   * Every list read and routing tick works out every node's last-seen time:
   * at 500 nodes, parsing and formatting the same times again was a few
   * percent of the server's CPU, so the last text parsed and the last time
   * formatted are kept per node (and per text, for other servers' times).
   */
  private readonly parsed = new Map<string, number>();
  private readonly formatted = new Map<string, { readonly ms: number; readonly text: string }>();

  private storedMs(text: string): number {
    const known = this.parsed.get(text);
    if (known !== undefined) return known;
    // Stored times only ever move forward: a text seen once is not seen again after its node's next write.
    if (this.parsed.size > 4 * this.heardAt.size + 1024) this.parsed.clear();
    const ms = Date.parse(text);
    this.parsed.set(text, ms);
    return ms;
  }

  private isoOf(name: string, ms: number): string {
    const known = this.formatted.get(name);
    if (known !== undefined && known.ms === ms) return known.text;
    const text = new Date(ms).toISOString();
    this.formatted.set(name, { ms, text });
    return text;
  }

  /** The node as shown: last seen when this server last heard it, if that is later than the store has it. */
  seen<Node extends Pick<StoredNode, "name" | "last_seen_at">>(node: Node): Node {
    const lastSeen = this.lastSeenText(node);
    return lastSeen === node.last_seen_at ? node : { ...node, last_seen_at: lastSeen };
  }
}
