import type { ModelClass } from "../src/catalog/schema.js";
import type { DemandProfile, ReplicaDemand, Snapshot, SnapshotCard, SnapshotNode } from "../src/placement/types.js";

const GiB = 1024 ** 3;

/**
 * A fleet of `nodes` machines of eight 80 GB H100s, each its own NVLink
 * fabric, with 2 TiB of host memory and 128 cores, and nothing running yet.
 * With `nodesPerFabric`, the machines share InfiniBand fabrics of that many
 * nodes each (what replicas over several nodes need).
 */
export function benchFleet(nodes: number, nodesPerFabric?: number): Snapshot {
  const list: SnapshotNode[] = [];
  for (let position = 0; position < nodes; position += 1) {
    const cards: SnapshotCard[] = [];
    const fabric = nodesPerFabric !== undefined ? `ib-${Math.floor(position / nodesPerFabric)}` : `nvl-${position}`;
    for (let index = 0; index < 8; index += 1) cards.push({ index, cardClass: "h100", memoryBytes: 80 * GiB, fabric });
    list.push({ name: `node-${String(position).padStart(5, "0")}`, schedulable: true, engines: ["vllm", "llamacpp"], cards, memoryBytes: 2048 * GiB, cpuCores: 128 });
  }
  return { nodes: list, replicas: [] };
}

const gpu = (gpus: number, bytesPerCard: number): DemandProfile => ({
  name: `h100x${gpus}`,
  engine: "vllm",
  cardClass: "h100",
  gpus,
  memoryBytes: 16 * GiB * gpus,
  cpuCores: 4 * gpus,
  bytesPerCard,
});
const cpu: DemandProfile = { name: "cpu", engine: "llamacpp", cardClass: undefined, gpus: 0, memoryBytes: 24 * GiB, cpuCores: 8, bytesPerCard: undefined };

/**
 * Demands adding up to `replicas` replicas over models of one to four
 * replicas each: six in ten small (one card, or the CPU when no card is
 * left), a quarter on two cards, one in ten on four, one in twenty on eight;
 * a fifth critical, a fifth opportunistic. The same mix at every size, built
 * from the model's number, not a random draw. With `gangs`, every tenth
 * model instead runs each replica over two 8-card nodes of one fabric.
 */
export function benchDemands(replicas: number, gangs = false): ReplicaDemand[] {
  const demands: ReplicaDemand[] = [];
  let left = replicas;
  for (let model = 0; left > 0; model += 1) {
    const count = Math.min(left, 1 + (model % 4));
    left -= count;
    const size = model % 20;
    // With gangs, one model in ten runs over two 8-card nodes of one fabric (its replicas are gangs).
    const gang = gangs && model % 10 === 5;
    const profiles = gang
      ? [{ ...gpu(8, 70 * GiB), name: "h100x2x8", nodes: 2 }]
      : size < 12
        ? [gpu(1, 30 * GiB), cpu]
        : size < 17
          ? [gpu(2, 60 * GiB)]
          : size < 19
            ? [gpu(4, 65 * GiB)]
            : [gpu(8, 70 * GiB)];
    const modelClass: ModelClass = model % 5 === 0 ? "critical" : model % 5 === 4 ? "opportunistic" : "standard";
    demands.push({ model: `model-${String(model).padStart(5, "0")}`, modelClass, count, profiles });
  }
  return demands;
}
