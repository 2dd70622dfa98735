import type { ReplicaStatus } from "../../src/protocol/agent-protocol.js";

/** A replica as its agent reports it: one card of model tiny, in `state`, with `extra` fields over that. */
export function replicaStatus(id: string, state: ReplicaStatus["state"], extra: Partial<ReplicaStatus> = {}): ReplicaStatus {
  return { id, model: "tiny", profile: "default", engine: "vllm", cards: [0], state, since: new Date(0).toISOString(), ...extra };
}
