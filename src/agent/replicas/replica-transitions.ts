import type { ReplicaState } from "../../protocol/agent-protocol.js";

/**
 * Every change of state a replica may make, and nothing else. A replica
 * fetches, starts, serves, and ends through draining (a stop) or failed (its
 * engine died, its fetch or health wait failed). Draining to draining is a
 * takeover: an engine found running without a record is put to draining at
 * once (so its cards count as held) and then given the reason it is stopped.
 * stopped and failed lead nowhere: a replica started again under the same id
 * is a new record, not a transition.
 */
export const replicaTransitions: Readonly<Record<ReplicaState, readonly ReplicaState[]>> = {
  fetching: ["starting", "draining", "failed"],
  starting: ["ready", "draining", "failed"],
  ready: ["draining", "failed"],
  draining: ["draining", "stopped", "failed"],
  stopped: [],
  failed: [],
};

/**
 * Why a change of state is refused, or undefined when the table lists it.
 * A refusal is a bug in the agent: the supervisor logs it and keeps the
 * replica as it was, rather than throw inside a fetch, a health wait or an
 * exit handler, where the throw would end nowhere and leave the engine unseen.
 */
export function transitionRefusal(from: ReplicaState, to: ReplicaState): string | undefined {
  if (replicaTransitions[from].includes(to)) return undefined;
  const allowed = replicaTransitions[from];
  return `a replica cannot go from ${from} to ${to}: from ${from} it goes only to ${allowed.length > 0 ? allowed.join(", ") : "nothing (it has ended)"}`;
}
