import type { ResolvedProfile } from "../catalog/index.js";
import type { DemandProfile } from "./types.js";

const GiB = 1024 ** 3;

/**
 * What one replica of a catalog profile needs, as placement reads it.
 * `memory_gb` is taken in GiB, the unit the fleet's host memory is counted
 * in (and the agent's `--simulate "cpu:32c/64g"`), so "memory_gb: 64" fits
 * a 64 GiB host exactly instead of failing by the 7% between GB and GiB.
 * `bytesPerCard` comes from demandBytesPerCard when the model's files were
 * read, else undefined.
 */
export function demandProfile(profile: ResolvedProfile, bytesPerCard: number | undefined): DemandProfile {
  return {
    name: profile.name,
    engine: profile.engine,
    cardClass: profile.gpu_class,
    gpus: profile.gpus,
    ...(profile.nodes > 1 ? { nodes: profile.nodes } : {}),
    memoryBytes: Math.round((profile.memory_gb ?? 0) * GiB),
    cpuCores: profile.cpu_cores ?? 0,
    bytesPerCard: profile.gpus > 0 ? bytesPerCard : undefined,
  };
}
