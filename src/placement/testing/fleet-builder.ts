import type { EngineName, ModelClass } from "../../catalog/schema.js";
import type { DemandProfile, HeldReplica, ReplicaDemand, SnapshotCard, SnapshotNode } from "../types.js";

export const GiB = 1024 ** 3;

/** "4xh100-80@nvl0" groups, joined by "+", on one node: cards numbered in order. */
export function cardsOf(spec: string): SnapshotCard[] {
  const cards: SnapshotCard[] = [];
  for (const part of spec.split("+").filter((each) => each.length > 0)) {
    const match = /^(\d+)x([a-z0-9]+)-(\d+)@([a-z0-9-]+)$/.exec(part);
    if (!match) throw new Error(`test fleet spec "${part}" is not COUNTxCLASS-GB@FABRIC`);
    for (let count = 0; count < Number(match[1]); count += 1) {
      cards.push({ index: cards.length, cardClass: match[2] as string, memoryBytes: Number(match[3]) * GiB, fabric: match[4] as string });
    }
  }
  return cards;
}

export interface NodeOptions {
  readonly engines?: readonly EngineName[];
  readonly memoryGiB?: number;
  readonly cpuCores?: number;
  readonly unschedulable?: string;
}

export function node(name: string, cards: string, options: NodeOptions = {}): SnapshotNode {
  return {
    name,
    schedulable: options.unschedulable === undefined,
    ...(options.unschedulable !== undefined ? { unschedulableReason: options.unschedulable } : {}),
    engines: options.engines ?? ["vllm", "sglang", "llamacpp"],
    cards: cardsOf(cards),
    memoryBytes: (options.memoryGiB ?? 512) * GiB,
    cpuCores: options.cpuCores ?? 64,
  };
}

export function gpuProfile(gpus: number, options: Partial<DemandProfile> = {}): DemandProfile {
  return { name: options.name ?? `gpu${gpus}`, engine: "vllm", cardClass: "h100", gpus, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined, ...options };
}

export function cpuProfile(memoryGiB: number, cpuCores: number, options: Partial<DemandProfile> = {}): DemandProfile {
  return { name: "cpu", engine: "llamacpp", cardClass: undefined, gpus: 0, memoryBytes: memoryGiB * GiB, cpuCores, bytesPerCard: undefined, ...options };
}

export function demand(model: string, count: number, profiles: readonly DemandProfile[], modelClass: ModelClass = "standard"): ReplicaDemand {
  return { model, modelClass, count, profiles };
}

export function held(id: string, model: string, nodeName: string, cards: readonly number[], modelClass: ModelClass = "standard", host: { memoryGiB?: number; cpuCores?: number } = {}): HeldReplica {
  return { id, model, profile: "gpu", node: nodeName, cards, memoryBytes: (host.memoryGiB ?? 0) * GiB, cpuCores: host.cpuCores ?? 0, modelClass };
}
