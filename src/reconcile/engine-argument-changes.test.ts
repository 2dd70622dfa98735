import { describe, expect, it } from "vitest";
import { modelEntrySchema, type ModelEntry } from "../catalog/schema.js";
import { catalogModelOf as modelOf } from "../catalog/testing/catalog-model-of.js";
import { argumentChanges, engineArgumentChanges } from "./engine-argument-changes.js";

const entry: ModelEntry = modelEntrySchema.parse({
  name: "chat",
  context: 8192,
  profiles: [
    { name: "v", engine: "vllm", source: "/m", gpu_class: "h100", gpus: 1 },
    { name: "s", engine: "sglang", source: "/m", gpu_class: "h100", gpus: 1 },
    { name: "t", engine: "trtllm", source: "/m", gpu_class: "h100", gpus: 1 },
    { name: "l", engine: "llamacpp", source: "/m.gguf", slots: 2 },
  ],
});

describe("engineArgumentChanges", () => {
  it("shows each engine's context flag, and llama.cpp's slots × tokens", () => {
    const after = { ...entry, context: 16384, profiles: entry.profiles?.map((profile) => (profile.engine === "llamacpp" ? { ...profile, slots: 4 } : profile)) };
    const changes = engineArgumentChanges(modelOf(entry), modelOf(after), 0.9);
    expect(changes).toEqual([
      { profile: "v", engine: "vllm", arguments: [{ flag: "--max-model-len", before: "8192", after: "16384" }] },
      { profile: "s", engine: "sglang", arguments: [{ flag: "--context-length", before: "8192", after: "16384" }] },
      { profile: "t", engine: "trtllm", arguments: [{ flag: "--max_seq_len", before: "8192", after: "16384" }] },
      {
        profile: "l",
        engine: "llamacpp",
        arguments: [
          { flag: "--ctx-size", before: "16384", after: "65536" },
          { flag: "--parallel", before: "2", after: "4" },
        ],
      },
    ]);
  });

  it("shows tensor parallel for the GPU engines and the layer split for llama.cpp when cards change", () => {
    const gpus = (count: number) => ({ ...entry, profiles: entry.profiles?.map((profile) => ({ ...profile, gpus: count, gpu_class: "h100" })) });
    const changes = engineArgumentChanges(modelOf(gpus(1)), modelOf(gpus(2)), 0.9);
    expect(changes.map((change) => change.arguments)).toEqual([
      [{ flag: "--tensor-parallel-size", before: "1", after: "2" }],
      [{ flag: "--tp-size", before: "1", after: "2" }],
      [{ flag: "--tp_size", before: "1", after: "2" }],
      [
        { flag: "--split-mode", before: null, after: "layer" },
        { flag: "--tensor-split", before: null, after: "1,1" },
      ],
    ]);
  });

  it("shows nothing for an unchanged model", () => {
    expect(engineArgumentChanges(modelOf(entry), modelOf(entry), 0.9).every((change) => change.arguments.length === 0)).toBe(true);
  });
});

describe("argumentChanges", () => {
  it("compares flags by value, keeping flags without values and repeated flags", () => {
    expect(argumentChanges(["prog", "--a", "1", "--flag", "--lora", "x", "--lora", "y"], ["prog", "--a=2", "--lora", "x", "--b", "p", "q"])).toEqual([
      { flag: "--a", before: "1", after: "2" },
      { flag: "--flag", before: "", after: null },
      { flag: "--lora", before: "x y", after: "x" },
      { flag: "--b", before: null, after: "p q" },
    ]);
  });
});
