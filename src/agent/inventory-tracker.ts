import type { Inventory } from "../protocol/index.js";
import { withSimulatedUse, type SimulatedReplicaUse } from "./simulated-card-use.js";

/** Reads the node's inventory; `lastKnownCards` is what to keep for cards a failing nvidia-smi cannot read. */
export type GatherInventory = (lastKnownCards?: Inventory["gpus"]) => Promise<Inventory>;

/** What the next heartbeat carries of the inventory; `text` is handed back to delivered() once the server has it. */
export interface InventoryReport {
  readonly inventory: Inventory;
  readonly text: string;
  /** Whether the heartbeat sends it: the first after a join or a start, and whenever it changed since. */
  readonly send: boolean;
}

/**
 * The node's inventory as the server last heard it. Read again every 30 s
 * (or at once after something was installed), sent only when it changed:
 * 500 nodes re-sending their unchanged cards every 2 s would make every
 * heartbeat a write of the node row on the server.
 */
export class InventoryTracker {
  static readonly refreshMs = 30_000;

  private inventory: Inventory;
  private sendNext = true;
  private lastSentText = "";
  private lastRefresh: number;

  private constructor(
    first: Inventory,
    private readonly gather: GatherInventory,
    private readonly now: () => number,
  ) {
    this.inventory = first;
    this.lastRefresh = now();
  }

  static async start(gather: GatherInventory, now: () => number = Date.now): Promise<InventoryTracker> {
    return new InventoryTracker(await gather(), gather, now);
  }

  get current(): Inventory {
    return this.inventory;
  }

  /** Something the inventory reports changed on the node (ComfyUI installed): the next heartbeat reads it again instead of in 30 s. */
  markStale(): void {
    this.lastRefresh = 0;
  }

  /**
   * The inventory for the next heartbeat, read again when due. `simulatedUse`
   * (with --simulate) is what runs on the pretend cards, which then say what
   * they hold, as nvidia-smi would within a beat.
   */
  async report(simulatedUse?: readonly SimulatedReplicaUse[]): Promise<InventoryReport> {
    if (this.now() - this.lastRefresh > InventoryTracker.refreshMs) {
      this.lastRefresh = this.now();
      // A refresh whose nvidia-smi fails keeps the cards: replicas still run on them.
      const before = this.inventory;
      this.inventory = await this.gather(before.gpus).catch(() => before);
    }
    if (simulatedUse) this.inventory = { ...this.inventory, gpus: withSimulatedUse(this.inventory.gpus, simulatedUse) };
    const text = JSON.stringify(this.inventory);
    return { inventory: this.inventory, text, send: this.sendNext || text !== this.lastSentText };
  }

  /** The server accepted a heartbeat that carried this report. */
  delivered(report: InventoryReport): void {
    if (!report.send) return;
    this.sendNext = false;
    this.lastSentText = report.text;
  }

  /** A join carries the inventory as it is now: the heartbeats after it need not repeat it. */
  joinedWith(inventory: Inventory): void {
    this.sendNext = false;
    this.lastSentText = JSON.stringify(inventory);
  }
}
