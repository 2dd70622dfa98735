import type { CardInventory, ReplicaState } from "../protocol/index.js";

/** What of a replica the pretend cards need to say how much memory they hold. */
export interface SimulatedReplicaUse {
  readonly cards: readonly number[];
  readonly state: ReplicaState;
  /** The share of the card the engine is started with (vLLM's --gpu-memory-utilization). */
  readonly gpuMemoryUtilization: number;
}

/** The states in which an engine process holds its cards' memory. */
const holding: readonly ReplicaState[] = ["starting", "ready", "draining"];

/**
 * What simulated cards report as used, as nvidia-smi would on real ones:
 * the other processes they were given, plus for every engine running on
 * the card the share of its memory that vLLM claims at start
 * (gpu_memory_utilization of the whole card, whatever the model needs: the
 * rest becomes KV cache). So the console shows the gap every vLLM operator
 * sees between what the planner priced and what the card says is used.
 */
export function withSimulatedUse(gpus: readonly CardInventory[], replicas: readonly SimulatedReplicaUse[]): CardInventory[] {
  return gpus.map((gpu) => {
    const foreign = gpu.memory_foreign_bytes ?? 0;
    const engines = replicas
      .filter((replica) => holding.includes(replica.state) && replica.cards.includes(gpu.index))
      .reduce((sum, replica) => sum + Math.round(replica.gpuMemoryUtilization * gpu.memory_bytes), 0);
    return { ...gpu, memory_used_bytes: Math.min(gpu.memory_bytes, foreign + engines) };
  });
}
