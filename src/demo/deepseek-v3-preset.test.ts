import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPresets } from "../catalog/presets/load-presets.js";
import type { Preset } from "../catalog/presets/preset-schema.js";
import { shippedPresetsFolder } from "../catalog/presets/shipped-presets.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { planSource } from "../plan/plan-source.js";
import { readModelSource } from "../plan/read-model-source.js";
import type { Snapshot } from "../placement/index.js";
import { presetView } from "../services/preset-view.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { deepseekV3PublishedTotalSize, writeDeepSeekV3Checkpoint } from "./deepseek-v3-checkpoint.js";

const GiB = 1024 ** 3;
const source = "hf://deepseek-ai/DeepSeek-V3";
const preset = loadPresets(shippedPresetsFolder).find((each) => each.name === "deepseek-v3") as Preset;

function fleet(nodes: number, cardClass: string, memoryGiB: number): Snapshot {
  return {
    nodes: Array.from({ length: nodes }, (_, node) => ({
      name: `gpu-node-${node + 1}`,
      schedulable: true,
      engines: ["vllm"],
      cards: Array.from({ length: 8 }, (_, index) => ({ index, cardClass, memoryBytes: memoryGiB * GiB, fabric: "ib0" })),
      memoryBytes: 2048 * GiB,
      cpuCores: 128,
    })),
    replicas: [],
  };
}

describe("the deepseek-v3 preset, read from the stand-in hub", () => {
  let hub: HubServer;
  beforeAll(async () => {
    const folder = await writeDeepSeekV3Checkpoint(temporaryDirectory("llmgw-deepseek-"));
    hub = await startHubServer({ repositories: { "deepseek-ai/DeepSeek-V3": folder } });
  });
  afterAll(async () => hub?.close());

  it("reads as the publisher's FP8 checkpoint: 688.6 GB in 163 shards, MLA and 256 experts", async () => {
    const facts = await readModelSource(source, { hubEndpoint: hub.url });
    expect(facts.checkpoint.bytes).toBe(deepseekV3PublishedTotalSize);
    expect(facts.checkpoint.dtype).toBe("F8_E4M3");
    expect(facts.architecture.layers).toBe(61);
  });

  it("plans a replica over two nodes of 8 H100s on one fabric, and says what one node is short", async () => {
    const two = await planSource(source, { gpus: "2x8xH100-80GB@ib0", hubEndpoint: hub.url });
    const spanning = two.candidates.filter((candidate) => candidate.fits && candidate.nodes === 2);
    expect(spanning.map((candidate) => [candidate.engine, candidate.quantization, candidate.gpus])).toContainEqual(["vllm", "fp8", 8]);
    const vllm = spanning.find((candidate) => candidate.engine === "vllm" && candidate.quantization === "fp8");
    expect(vllm?.parallel).toEqual({ tensor: 8, pipeline: 2 });
    // The first stage's 31 of 61 layers and the embedding, at an eighth each: 44.9 GB on each of its cards.
    expect(vllm?.weights_bytes_per_card).toBe(44_858_128_564);

    const one = await planSource(source, { gpus: "8xH100-80GB", hubEndpoint: hub.url });
    expect(one.candidates.some((candidate) => candidate.fits)).toBe(false);
    const fp8 = one.candidates.find((candidate) => candidate.engine === "vllm" && candidate.quantization === "fp8" && candidate.gpus === 8);
    expect(fp8?.short).toEqual(["each card needs 81.0 GiB for weights and 3.9 GiB runtime overhead, has 72.0 GiB usable (0.90 of 80.0 GiB): 13.0 GiB short before any KV cache"]);

    const h200 = await planSource(source, { gpus: "8xH200-141GB", hubEndpoint: hub.url });
    expect(h200.candidates.some((candidate) => candidate.fits && candidate.nodes === 1 && candidate.gpus === 8)).toBe(true);
  });

  it("runs on two H100 nodes of one fabric, on one H200 node, and says why not on one H100 node", async () => {
    const facts = new Map([[source, await readModelSource(source, { hubEndpoint: hub.url })]]);
    const view = (snapshot: Snapshot) => presetView(preset, { facts, snapshot, fileSizes: new Map(), addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(view(fleet(2, "h100", 80)).runs_on).toMatchObject({ profile: "two-nodes", gpu_class: "h100" });
    expect(view(fleet(1, "h200", 141)).runs_on).toMatchObject({ profile: "one-node", node: "gpu-node-1", gpu_class: "h200" });
    const short = view(fleet(1, "h100", 80));
    expect(short.runs_on).toBeNull();
    expect(short.why_not).toBe(
      "profile one-node: 0 of 1 node: 1 has 72.0 GiB usable per card and needs 87.1 GiB; profile two-nodes: 0/1 fabric: ib0 has 1 node with 8 free cards of the 2 needed",
    );
  });
});
