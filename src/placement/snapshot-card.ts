import type { SnapshotCard } from "./types.js";

/** The card fields every view of a node's GPUs carries (the stored inventory, the node view). */
export interface CardFields {
  readonly index: number;
  readonly class: string;
  readonly memory_bytes: number;
  readonly memory_foreign_bytes?: number | null | undefined;
  readonly fabric: string;
}

/** A card as placement takes it, from any view of a node's GPUs: the one place that carries the foreign memory over. */
export function snapshotCard(gpu: CardFields): SnapshotCard {
  return {
    index: gpu.index,
    cardClass: gpu.class,
    memoryBytes: gpu.memory_bytes,
    fabric: gpu.fabric,
    ...(gpu.memory_foreign_bytes !== undefined && gpu.memory_foreign_bytes !== null ? { foreignBytes: gpu.memory_foreign_bytes } : {}),
  };
}
