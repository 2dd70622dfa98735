import { nodeState, type NodeState } from "../../fleet/index.js";
import { oldestLastSeen, type StoredNode, type Store } from "../../store/index.js";
import type { FleetSettings } from "./fleet-settings.js";
import type { NodesHeard } from "./nodes-heard.js";

/** Whether each node is ready, settling or lost, from when it was last heard and when this server started. */
export class NodeStates {
  constructor(
    private readonly store: Store,
    private readonly settings: FleetSettings,
    private readonly startedAtMs: number,
    private readonly now: () => number,
    private readonly heard: NodesHeard,
  ) {}

  /** Whether every node has reported since this server started (which closes the settling window early). */
  everyNodeReportedSince(oldest: string | undefined): boolean {
    return oldest === undefined || Date.parse(oldest) >= this.startedAtMs;
  }

  stateOf(node: Pick<StoredNode, "name" | "last_seen_at">, everyNodeReportedSinceStart: boolean): NodeState {
    return nodeState({
      lastSeenMs: this.heard.lastSeenMs(node),
      nowMs: this.now(),
      heartbeatDeadlineMs: this.settings.heartbeatDeadlineMs,
      serverStartedMs: this.startedAtMs,
      settlingWindowMs: this.settings.settlingWindowMs,
      everyNodeReportedSinceStart,
    });
  }

  nodeStates(nodes: readonly Pick<StoredNode, "name" | "last_seen_at">[]): Map<string, NodeState> {
    const everyNodeReported = nodes.every((node) => this.heard.lastSeenMs(node) >= this.startedAtMs);
    return new Map(nodes.map((node) => [node.name, this.stateOf(node, everyNodeReported)]));
  }

  /**
   * The next moment a node's state changes with no beat: a ready node's
   * deadline passes (it turns lost, or settling), or the settling window
   * closes. No write announces either, so the reconciler times a pass to it.
   */
  nextChangeMs(nodes: readonly Pick<StoredNode, "name" | "last_seen_at">[]): number | undefined {
    const nowMs = this.now();
    let earliest: number | undefined;
    const consider = (moment: number) => {
      if (moment > nowMs && (earliest === undefined || moment < earliest)) earliest = moment;
    };
    consider(this.startedAtMs + this.settings.settlingWindowMs);
    // Ready while silent for at most the deadline: it changes the millisecond after.
    for (const node of nodes) consider(this.heard.lastSeenMs(node) + this.settings.heartbeatDeadlineMs + 1);
    return earliest;
  }

  /** One node's state, read with one row and one aggregate rather than the whole fleet. */
  async nodeStateByKey(node: StoredNode): Promise<NodeState> {
    return this.stateOf(node, this.everyNodeReportedSince(await oldestLastSeen(this.store.db)));
  }
}
