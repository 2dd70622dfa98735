import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCatalog } from "../catalog/build-catalog.js";
import { loadPresets, parsePresetFile } from "../catalog/presets/load-presets.js";
import type { Preset } from "../catalog/presets/preset-schema.js";
import { shippedPresetsFolder } from "../catalog/presets/shipped-presets.js";
import { parseWeightsSource } from "../catalog/weights-source.js";
import { DomainError } from "../errors/domain-error.js";
import { poolingRunner } from "../protocol/engine-routes.js";
import type { Snapshot } from "../placement/index.js";
import type { PresetProfileView } from "../protocol/views.js";
import { bf16Tolerance, calibrationTable, ggufTolerance } from "../plan/calibration.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { readFileSize } from "../plan/read-file-size.js";
import { readModelSource } from "../plan/read-model-source.js";
import { plannerReads, presetView, type FileSizes } from "../services/preset-view.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { presetCheckpoints, presetComfyFiles, writePresetCheckpoints } from "./preset-checkpoints.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";

const GiB = 1024 ** 3;
const presets = loadPresets(shippedPresetsFolder);
// ComfyUI profiles are a workflow and its files, which the planner does not read; their presets are tested with the comfyui engine.
const sources = (preset: Preset) => (preset.model.profiles ?? []).filter(plannerReads).map((profile) => profile.source);
const planned = presets.filter((preset) => sources(preset).length > 0);
/** Presets no single node of the demo holds (every profile spans nodes or needs more than its cards): tested on fleets of their own. */
const beyondTheDemo = new Set(["deepseek-v3"]);
const comfyFileSources = (preset: Preset) => (preset.model.profiles ?? []).flatMap((profile) => (profile.comfy?.files ?? []).map((file) => file.source));
const comfyPresets = presets.filter((preset) => comfyFileSources(preset).length > 0);

/**
 * The demo's two machines, as placement sees them with nothing running, and
 * without the 20 GiB another process holds on gpu-node-1's card 1: the demo's
 * first two models take both H100s at once, and these tests ask what a free
 * fleet of that shape runs (the 70B on two alike H100s first).
 */
function demoFleet(): Snapshot {
  const cards = (count: number, cardClass: string, memoryGiB: number, fabric: string) =>
    Array.from({ length: count }, (_, index) => ({ index, cardClass, memoryBytes: memoryGiB * GiB, fabric }));
  return {
    nodes: [
      { name: "gpu-node-1", schedulable: true, engines: ["vllm", "llamacpp", "comfyui"], cards: cards(2, "h100", 80, "nvl0"), memoryBytes: 256 * GiB, cpuCores: 32 },
      { name: "gpu-node-2", schedulable: true, engines: ["vllm", "llamacpp", "comfyui"], cards: cards(4, "l40s", 48, "pcie"), memoryBytes: 512 * GiB, cpuCores: 64 },
    ],
    replicas: [],
  };
}

function cpuOnlyFleet(): Snapshot {
  return { nodes: [{ name: "cpu-node", schedulable: true, engines: ["llamacpp"], cards: [], memoryBytes: 64 * GiB, cpuCores: 16 }], replicas: [] };
}

describe("the shipped presets", () => {
  it("are each a valid catalog entry, and together a valid catalog", () => {
    expect(presets.length).toBeGreaterThanOrEqual(5);
    const catalog = buildCatalog(presets.map((preset) => ({ entry: preset.model, source: "runtime" as const, place: preset.file })));
    expect(catalog.models.map((model) => model.name).sort()).toEqual(presets.map((preset) => preset.name).sort());
  });

  it("include two chat models of different sizes with a GPU and a CPU profile each, an embedding model, and a chat and an embedding model for any CPU", () => {
    const hasBoth = (preset: Preset) =>
      (preset.model.profiles ?? []).some((profile) => (profile.gpus ?? 0) > 0) && (preset.model.profiles ?? []).some((profile) => profile.engine === "llamacpp" && (profile.gpus ?? 0) === 0);
    const chat = presets.filter((preset) => preset.preset.tasks.includes("chat") && hasBoth(preset));
    expect(new Set(chat.map((preset) => preset.model.origin)).size).toBeGreaterThanOrEqual(2);
    expect(presets.some((preset) => preset.preset.tasks.includes("embeddings"))).toBe(true);
    // Small enough for a laptop: one core and at most 2 GB on llama.cpp, with nothing but the CPU profile.
    const anyCpu = presets.filter((preset) => (preset.model.profiles ?? []).every((profile) => profile.engine === "llamacpp" && (profile.gpus ?? 0) === 0 && (profile.memory_gb ?? Infinity) <= 2 && profile.cpu_cores === 1));
    expect(anyCpu.map((preset) => [preset.name, preset.preset.tasks])).toEqual([
      ["nomic-embed-text-v1.5", ["embeddings"]],
      ["qwen2.5-0.5b-instruct", ["chat"]],
    ]);
  });

  it("start every profile of an embedding or rerank preset's engine to pool, so it answers those routes and the gateway refuses it chat", () => {
    const pooling = presets.filter((preset) => preset.preset.tasks.some((task) => task === "embeddings" || task === "rerank"));
    expect(pooling.map((preset) => preset.name)).toEqual(expect.arrayContaining(["qwen3-embedding-0.6b", "qwen3-reranker-0.6b"]));
    for (const preset of pooling) {
      for (const profile of preset.model.profiles ?? []) expect(poolingRunner(profile.engine, profile.args ?? []), `${preset.name}/${profile.name}`).toBeDefined();
    }
    const reranker = presets.find((preset) => preset.name === "qwen3-reranker-0.6b") as Preset;
    expect(reranker.preset.tasks).toEqual(["rerank"]);
    expect(poolingRunner("vllm", reranker.model.profiles?.[0]?.args ?? [])?.routes).toEqual(expect.arrayContaining(["rerank", "score"]));
  });

  it("include the demo's models", () => {
    expect(presets.map((preset) => preset.name)).toEqual(expect.arrayContaining(["qwen2.5-7b-instruct", "llama-3.1-8b", "llama-3.3-70b-instruct"]));
  });

  it("name the licence of the repository they come from", () => {
    for (const preset of planned) {
      const origin = parseWeightsSource(preset.model.origin ?? "");
      expect(origin.kind, preset.name).toBe("hub");
      const repository = origin.kind === "hub" ? origin.repo : "";
      // A publisher with separate code and model licences (DeepSeek's LICENSE-CODE, LICENSE-MODEL) is linked to the model's.
      expect([`https://huggingface.co/${repository}/blob/main/LICENSE`, `https://huggingface.co/${repository}/blob/main/LICENSE-MODEL`], preset.name).toContain(preset.preset.licence.url);
    }
  });

  it("come from hub repositories the demo's stand-in hub serves, so they plan offline", () => {
    const served = new Set(presetCheckpoints.map((checkpoint) => checkpoint.repository));
    for (const source of presets.flatMap(sources)) {
      const parsed = parseWeightsSource(source);
      expect(parsed.kind === "hub" && served.has(parsed.repo), source).toBe(true);
    }
    const files = new Set(presetComfyFiles.map((file) => `${file.repository}/${file.path}`));
    for (const source of presets.flatMap(comfyFileSources)) {
      const parsed = parseWeightsSource(source);
      expect(parsed.kind === "hub" && files.has(`${parsed.repo}/${parsed.path}`), source).toBe(true);
    }
  });
});

describe("the shipped presets, planned from their sources", () => {
  let hub: HubServer;
  const facts = new Map<string, ModelFacts>();
  const fileSizes = new Map<string, number>() as Map<string, number> & FileSizes;

  beforeAll(async () => {
    const repositories = await writePresetCheckpoints(temporaryDirectory("llmgw-presets-"));
    hub = await startHubServer({ repositories });
    for (const source of new Set(presets.flatMap(sources))) facts.set(source, await readModelSource(source, { hubEndpoint: hub.url }));
    for (const source of new Set(presets.flatMap(comfyFileSources))) fileSizes.set(source, await readFileSize(source, { hubEndpoint: hub.url }));
  });

  afterAll(async () => {
    await hub?.close();
  });

  it("count the parameters and bytes the publishers' files hold", () => {
    for (const entry of calibrationTable) {
      const bf16 = facts.get(`hf://${entry.huggingFaceId}`);
      if (bf16) expect(Math.abs(bf16.parameters - entry.publishedParameters) / entry.publishedParameters, entry.huggingFaceId).toBeLessThan(bf16Tolerance);
    }
    // Qwen3-Embedding-0.6B's model page: 595,776,512 parameters (tied embeddings, no output head).
    expect(facts.get("hf://Qwen/Qwen3-Embedding-0.6B")?.parameters).toBe(595_776_512);
    // Qwen2.5-0.5B-Instruct's model page: 0.49B parameters (tied embeddings).
    expect(facts.get("hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")?.parameters).toBe(494_032_768);
    // nomic-embed-text-v1.5's model page: 137M parameters; its Q4_K_M file, byte for byte as published, within the GGUF tolerance.
    const nomic = facts.get("hf://nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.Q4_K_M.gguf");
    expect(Math.abs((nomic?.parameters ?? 0) - 137e6) / 137e6).toBeLessThan(bf16Tolerance);
    const published = presetCheckpoints.find((checkpoint) => checkpoint.repository === "nomic-ai/nomic-embed-text-v1.5-GGUF")?.gguf?.publishedBytes ?? Number.NaN;
    expect(published).toBe(84_106_624);
    expect(Math.abs((nomic?.checkpoint.bytes ?? 0) - published) / published).toBeLessThan(ggufTolerance);
    const q4 = (id: string) => calibrationTable.find((entry) => entry.huggingFaceId === id)?.gguf.Q4_K_M?.bytes ?? Number.NaN;
    const gguf7b = facts.get("hf://Qwen/Qwen2.5-7B-Instruct-GGUF/qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf");
    const gguf14b = facts.get("hf://Qwen/Qwen2.5-14B-Instruct-GGUF/qwen2.5-14b-instruct-q4_k_m-00001-of-00003.gguf");
    // Every part is counted, not the first alone.
    expect(Math.abs((gguf7b?.checkpoint.bytes ?? 0) - q4("Qwen/Qwen2.5-7B-Instruct")) / q4("Qwen/Qwen2.5-7B-Instruct")).toBeLessThan(ggufTolerance);
    expect(Math.abs((gguf14b?.checkpoint.bytes ?? 0) - q4("Qwen/Qwen2.5-14B-Instruct")) / q4("Qwen/Qwen2.5-14B-Instruct")).toBeLessThan(ggufTolerance);
  });

  it("says why the demo's fleet cannot hold deepseek-v3: its cards are too small for one node, and it has no two nodes of 8 on a fabric", () => {
    expect([...beyondTheDemo]).toEqual(["deepseek-v3"]);
    const view = presetView(presets.find((preset) => preset.name === "deepseek-v3") as Preset, { facts, snapshot: demoFleet(), fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(view.runs_on).toBeNull();
    expect(view.why_not).toBe(
      "profile one-node: 0 of 2 nodes: 1 has 43.2 GiB usable per card and needs 87.1 GiB, 1 has 72.0 GiB usable per card and needs 87.1 GiB; " +
        "profile two-nodes: 0/2 fabrics: nvl0 has 0 nodes with 8 free cards of the 2 needed; pcie has 0 nodes with 8 free cards of the 2 needed",
    );
  });

  it.each(planned.filter((preset) => !beyondTheDemo.has(preset.name)).map((preset) => [preset.name, preset] as const))("%s: every profile priced, and placed on the demo's fleet", (_name, preset) => {
    const view = presetView(preset, { facts, snapshot: demoFleet(), fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 });
    for (const profile of view.profiles.filter(plannerReads)) {
      expect(profile.unreadable, profile.name).toBeNull();
      expect(profile.weights_bytes, profile.name).toBeGreaterThan(0);
      if (profile.gpus > 0) {
        expect(profile.bytes_per_card, profile.name).toBeGreaterThan(0);
      } else {
        // What the profile reserves holds what the planner says a llama.cpp replica needs at the preset's context and slots.
        expect(profile.planned_memory_bytes, profile.name).toBeGreaterThan(0);
        expect(profile.memory_bytes ?? 0, profile.name).toBeGreaterThanOrEqual(profile.planned_memory_bytes ?? Number.POSITIVE_INFINITY);
      }
    }
    expect(view.why_not).toBeNull();
    expect(view.runs_on?.profile).toBe(view.profiles[0]?.name);
  });

  it("puts the 70B model on two H100s, and on four L40S when the H100s are taken", () => {
    const preset = presets.find((candidate) => candidate.name === "llama-3.3-70b-instruct") as Preset;
    const free = presetView(preset, { facts, snapshot: demoFleet(), fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(free.runs_on).toEqual({ profile: "gpu-2", node: "gpu-node-1", cards: [0, 1], gpu_class: "h100" });
    const fleet = demoFleet();
    const busy: Snapshot = {
      ...fleet,
      replicas: [{ id: "other-1", model: "other", profile: "gpu", node: "gpu-node-1", cards: [0], memoryBytes: 0, cpuCores: 0, modelClass: "critical" }],
    };
    expect(presetView(preset, { facts, snapshot: busy, fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 }).runs_on).toEqual({
      profile: "gpu-4",
      node: "gpu-node-2",
      cards: [0, 1, 2, 3],
      gpu_class: "l40s",
    });
  });

  it("says why a GPU-only preset cannot run on a fleet of CPUs, and runs a chat preset there on its CPU profile", () => {
    const large = presetView(presets.find((candidate) => candidate.name === "llama-3.3-70b-instruct") as Preset, { facts, snapshot: cpuOnlyFleet(), fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(large.runs_on).toBeNull();
    expect(large.why_not).toBe("profile gpu-2: 0 of 1 node: 1 has no vllm installed; profile gpu-4: 0 of 1 node: 1 has no vllm installed");
    const small = presetView(presets.find((candidate) => candidate.name === "qwen2.5-7b-instruct") as Preset, { facts, snapshot: cpuOnlyFleet(), fileSizes, addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(small.runs_on).toEqual({ profile: "cpu", node: "cpu-node", cards: [], gpu_class: null });
  });

  it("says which presets answer for real on a CPU: a node that runs llama.cpp for real, with the host memory their CPU profile reserves", () => {
    const builtIn = { kind: "built-in" as const, version: "3.21.1", builds: ["cpu"], build: "cpu" };
    const find = (name: string) => presets.find((candidate) => candidate.name === name) as Preset;
    const view = (name: string, snapshot: Snapshot, real: ReadonlyMap<string, typeof builtIn>) =>
      presetView(find(name), { facts, snapshot, fileSizes, addedAs: [], gpuMemoryUtilization: 0.9, realLlamaCpp: real });
    const real = new Map([["cpu-node", builtIn]]);
    expect(view("qwen2.5-0.5b-instruct", cpuOnlyFleet(), real).on_cpu).toEqual({ profile: "cpu", node: "cpu-node", llama_cpp: builtIn, why_not: null });
    // The small embedding model too, in the 1 GiB it reserves: its 84 MB file, the slots' KV cache and llama.cpp's own.
    const nomic = view("nomic-embed-text-v1.5", cpuOnlyFleet(), real);
    expect(nomic.on_cpu).toEqual({ profile: "cpu", node: "cpu-node", llama_cpp: builtIn, why_not: null });
    const cpu = nomic.profiles[0] as PresetProfileView;
    expect(Math.abs((cpu.weights_bytes ?? 0) - 84_106_624) / 84_106_624).toBeLessThan(ggufTolerance);
    // 2 slots × 2,048 tokens × 36,864 bytes (12 layers × 12 KV heads × 64, keys and values in f16) on top of the file.
    expect(cpu.planned_memory_bytes).toBeGreaterThanOrEqual((cpu.weights_bytes ?? Number.NaN) + 2 * 2048 * 36_864);
    expect(cpu.planned_memory_bytes).toBeLessThanOrEqual(cpu.memory_bytes ?? 0);
    // A GPU-only preset has no CPU profile to ask about.
    expect(view("llama-3.3-70b-instruct", cpuOnlyFleet(), real).on_cpu).toBeNull();
    // The demo's simulated nodes run llamacpp as the simulated engine: nothing there answers for real.
    expect(view("qwen2.5-0.5b-instruct", demoFleet(), new Map()).on_cpu?.why_not).toMatch(/^no node runs llama.cpp for real/);
    // A laptop with 1 GiB free for it: the 2 GiB the profile reserves do not fit, and placement says so.
    const small: Snapshot = { nodes: [{ ...cpuOnlyFleet().nodes[0]!, memoryBytes: 1 * GiB }], replicas: [] };
    const refused = view("qwen2.5-0.5b-instruct", small, real).on_cpu;
    expect(refused).toMatchObject({ profile: "cpu", node: null, llama_cpp: null });
    expect(refused?.why_not).toContain("memory");
  });

  it("sizes the ComfyUI presets by the files their workflows load, as the hub publishes them", () => {
    expect(comfyPresets.map((preset) => preset.name).sort()).toEqual(["flux1-schnell", "hunyuan3d-2"]);
    for (const preset of comfyPresets) {
      const published = presetComfyFiles.filter((file) => comfyFileSources(preset).some((source) => source.endsWith(`/${file.path}`))).reduce((sum, file) => sum + file.bytes, 0);
      const view = presetView(preset, { facts, fileSizes, snapshot: demoFleet(), addedAs: [], gpuMemoryUtilization: 0.9 });
      expect(view.profiles[0], preset.name).toMatchObject({ engine: "comfyui", weights_bytes: published, bytes_per_card: published, unreadable: null });
      expect(view.runs_on, preset.name).toMatchObject({ profile: "gpu", cards: [expect.any(Number)] });
    }
  });

  it("says a ComfyUI preset does not fit a card smaller than its files, and why", () => {
    const flux = presets.find((candidate) => candidate.name === "flux1-schnell") as Preset;
    const small: Snapshot = {
      nodes: [{ name: "small-node", schedulable: true, engines: ["comfyui"], cards: [{ index: 0, cardClass: "rtx4080", memoryBytes: 16 * GiB, fabric: "pcie" }], memoryBytes: 64 * GiB, cpuCores: 16 }],
      replicas: [],
    };
    const view = presetView(flux, { facts, fileSizes, snapshot: small, addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(view.runs_on).toBeNull();
    expect(view.why_not).toBe("0 of 1 node: 1 has 14.4 GiB usable per card and needs 16.0 GiB");
    const noComfy: Snapshot = { ...demoFleet(), nodes: demoFleet().nodes.map((node) => ({ ...node, engines: ["vllm", "llamacpp"] })) };
    expect(presetView(flux, { facts, fileSizes, snapshot: noComfy, addedAs: [], gpuMemoryUtilization: 0.9 }).why_not).toContain("comfyui");
  });

  it("says a ComfyUI file cannot be read, naming it, and leaves the size unknown", () => {
    const flux = presets.find((candidate) => candidate.name === "flux1-schnell") as Preset;
    const source = comfyFileSources(flux)[0] as string;
    const view = presetView(flux, { facts, fileSizes: new Map([[source, { unreadable: "404: no such file" }]]), snapshot: demoFleet(), addedAs: [], gpuMemoryUtilization: 0.9 });
    expect(view.profiles[0]).toMatchObject({ weights_bytes: null, bytes_per_card: null, unreadable: `${source}: 404: no such file` });
  });

  it("says a preset's source cannot be read, and still lists the preset", () => {
    const preset = presets.find((candidate) => candidate.name === "qwen2.5-7b-instruct") as Preset;
    const view = presetView(preset, { facts: new Map([["hf://Qwen/Qwen2.5-7B-Instruct", { unreadable: "hub unreachable" }]]), fileSizes, snapshot: demoFleet(), addedAs: ["chat"], gpuMemoryUtilization: 0.9 });
    expect(view.profiles[0]).toMatchObject({ unreadable: "hub unreachable", weights_bytes: null, bytes_per_card: null });
    expect(view.added_as).toEqual(["chat"]);
  });
});

describe("a preset file", () => {
  const valid = [
    "preset:",
    "  description: a small model",
    "  licence: { name: MIT, url: https://example.com/LICENSE }",
    "  tasks: [chat]",
    "model:",
    "  name: small",
    "  profiles:",
    "    - { engine: vllm, source: hf://org/small, gpus: 1 }",
    "",
  ].join("\n");

  const refusal = (text: string, file: string): DomainError => {
    try {
      parsePresetFile(text, file);
    } catch (error) {
      if (error instanceof DomainError) return error;
      throw error;
    }
    throw new Error("the file was accepted");
  };

  it("is read with its model's name", () => {
    expect(parsePresetFile(valid, "small.yaml")).toMatchObject({ name: "small", file: "small.yaml", preset: { tasks: ["chat"] } });
  });

  it("is refused with the file, line and field of a mistake in the model", () => {
    const error = refusal(valid.replace("gpus: 1", "gpu: 1"), "small.yaml");
    expect(error.code).toBe("unknown_key");
    expect(error.message).toMatch(/small\.yaml:8:\d+/);
    expect(error.message).toContain('did you mean "gpus"');
  });

  it("is refused when a task is not one llmgw serves", () => {
    const error = refusal(valid.replace("tasks: [chat]", "tasks: [speech]"), "small.yaml");
    expect(error.message).toMatch(/small\.yaml:4:\d+.*preset\.tasks\[0\]/);
    expect(error.message).toContain("chat, completions, embeddings, rerank, images, image-to-3d");
  });

  it("is refused when its name is not its file's", () => {
    const error = refusal(valid, "large.yaml");
    expect(error.message).toContain('model.name is "small" and the file is large.yaml');
    expect(error.hint).toContain("small.yaml");
  });
});
