import { defaultReconcileSettings } from "../../src/catalog/reconcile-settings.js";
import type { DesiredModel, Observed, ObservedNode, ObservedReplica } from "../../src/reconcile/types.js";

/** A desired model, a node and a replica as the reconciler's pure functions take them, each ready and placeable unless told otherwise. */
export const GiB = 1024 ** 3;
export const now = 1_000_000_000;
export const settings = { ...defaultReconcileSettings, withdrawDelayMs: 1000, resumeAfterMs: 5000 };

export function node(name: string, overrides: Partial<ObservedNode> = {}): ObservedNode {
  return {
    name,
    state: "ready",
    cordoned: false,
    draining: false,
    schedulable: true,
    engines: ["vllm", "llamacpp"],
    cards: [0, 1].map((index) => ({ index, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" })),
    memoryBytes: 256 * GiB,
    cpuCores: 32,
    ...overrides,
  };
}

export function model(name: string, overrides: Partial<DesiredModel> = {}): DesiredModel {
  return {
    name,
    modelClass: "standard",
    min: 1,
    max: 1,
    idleTimeoutMs: 600_000,
    targetInFlight: undefined,
    profiles: [{ name: "h100", engine: "vllm", cardClass: "h100", gpus: 1, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }],
    demandAtMs: undefined,
    backoffUntilMs: undefined,
    restartBeforeMs: undefined,
    restartInPlace: false,
    busyAtMs: undefined,
    placement: undefined,
    ...overrides,
  };
}

export function replica(id: string, modelName: string, nodeName: string, cards: number[], overrides: Partial<ObservedReplica> = {}): ObservedReplica {
  return {
    id,
    model: modelName,
    profile: "h100",
    node: nodeName,
    cards,
    state: "ready",
    managed: true,
    placedAtMs: now - 60_000,
    withdrawnAtMs: undefined,
    inFlight: undefined,
    reason: null,
    memoryBytes: 0,
    cpuCores: 0,
    ...overrides,
  };
}

export const observed = (nodes: ObservedNode[], replicas: ObservedReplica[] = [], nowMs = now): Observed => ({ nowMs, nodes, replicas });
