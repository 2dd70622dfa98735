import { describe, expect, it } from "vitest";
import { resolveProfiles } from "../catalog/catalog-model.js";
import { demandProfile } from "./demand-profile.js";
import { checkNode } from "./check-node.js";
import { GiB, node } from "./testing/fleet-builder.js";

describe("demandProfile", () => {
  const [gpu, cpu] = resolveProfiles([
    { engine: "vllm", source: "hf://Qwen/Qwen2.5-7B-Instruct", gpu_class: "h100" },
    { engine: "llamacpp", source: "/models/q.gguf", memory_gb: 64, cpu_cores: 8 },
  ]);

  it("reads a GPU profile's class and cards, with the bytes each card must hold", () => {
    if (!gpu) throw new Error("no profile");
    expect(demandProfile(gpu, 20 * GiB)).toEqual({ name: "vllm", engine: "vllm", cardClass: "h100", gpus: 1, memoryBytes: 0, cpuCores: 0, bytesPerCard: 20 * GiB });
  });

  it("fits memory_gb: 64 on a host of 64 GiB", () => {
    if (!cpu) throw new Error("no profile");
    const profile = demandProfile(cpu, 20 * GiB);
    expect(profile.bytesPerCard).toBeUndefined();
    expect(checkNode({ nodes: [node("host", "", { memoryGiB: 64, cpuCores: 8 })], replicas: [] }, profile, "host")).toEqual({ fits: true, cards: [] });
  });
});
