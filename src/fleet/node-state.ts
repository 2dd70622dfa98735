/**
 * Whether a node is there, decided from times alone.
 *
 *   ready     heard from within the heartbeat deadline
 *   settling  silent, but the server itself has just started and not every
 *             known node has reported yet: a restarted server must not call
 *             nodes lost (and their replicas gone) for its own downtime
 *   lost      silent past the deadline, outside the settling window
 */
import type { NodeState } from "../protocol/index.js";
export type { NodeState };

export interface NodeStateInput {
  readonly lastSeenMs: number;
  readonly nowMs: number;
  readonly heartbeatDeadlineMs: number;
  readonly serverStartedMs: number;
  readonly settlingWindowMs: number;
  /** Every node in the store has reported since the server started: the window closes early. */
  readonly everyNodeReportedSinceStart: boolean;
}

export function nodeState(input: NodeStateInput): NodeState {
  if (input.nowMs - input.lastSeenMs <= input.heartbeatDeadlineMs) return "ready";
  const settling = input.nowMs - input.serverStartedMs < input.settlingWindowMs && !input.everyNodeReportedSinceStart;
  return settling ? "settling" : "lost";
}
