import { describe, expect, it } from "vitest";
import { buildCatalog } from "../catalog/build-catalog.js";
import { modelEntrySchema } from "../catalog/schema.js";
import { replicaSpecSchema } from "../protocol/agent-protocol.js";
import { buildReplicaSpec, storableReplicaSpec } from "./replica-spec.js";

const modelOf = (entry: unknown) => {
  const catalog = buildCatalog([{ entry: modelEntrySchema.parse(entry), source: "runtime", place: "test" }]);
  const model = catalog.models[0];
  if (!model) throw new Error("no model built");
  return model;
};

describe("buildReplicaSpec", () => {
  const model = modelOf({
    name: "tiny",
    context: 8192,
    adapters: [{ name: "sql", source: "hf://org/sql-lora@main", scale: 0.5 }],
    profiles: [{ name: "pair", engine: "vllm", source: "hf://org/tiny@main", gpus: 2, gpu_class: "l40s", args: ["--enforce-eager"], env: { A: "1" } }],
  });
  const profile = model.profiles[0];
  if (!profile) throw new Error("no profile");

  it("copies what the engine needs out of the catalog, in the agent protocol's shape", () => {
    const spec = buildReplicaSpec({ id: "tiny-1", model, profile, cards: [2, 3], gpuMemoryUtilization: 0.85, serverEnvironment: {} });
    expect(replicaSpecSchema.parse(spec)).toEqual(spec);
    expect(spec).toMatchObject({
      id: "tiny-1",
      model: "tiny",
      profile: "pair",
      engine: "vllm",
      source: "hf://org/tiny@main",
      cards: [2, 3],
      context: 8192,
      gpu_memory_utilization: 0.85,
      args: ["--enforce-eager"],
      env: { A: "1" },
      adapters: [{ name: "sql", source: "hf://org/sql-lora@main", scale: 0.5 }],
    });
  });

  it("takes a context asked for the replica over the model's, and passes simulation hints only when given", () => {
    const spec = buildReplicaSpec({ id: "tiny-2", model, profile, cards: [0, 1], context: 2048, gpuMemoryUtilization: 0.9, simulation: { load_ms: 5 }, serverEnvironment: {} });
    expect(spec.context).toBe(2048);
    expect(spec.simulation).toEqual({ load_ms: 5 });
    expect("simulation" in buildReplicaSpec({ id: "tiny-3", model, profile, cards: [0, 1], gpuMemoryUtilization: 0.9, serverEnvironment: {} })).toBe(false);
  });

  it("leaves the catalog's arrays unshared, so a later change to the spec cannot reach the catalog", () => {
    const spec = buildReplicaSpec({ id: "tiny-4", model, profile, cards: [0, 1], gpuMemoryUtilization: 0.9, serverEnvironment: {} });
    spec.args.push("--more");
    expect(profile.args).toEqual(["--enforce-eager"]);
  });

  it("takes secret_env values from the server's environment for the agent, and stores only the variable's name", () => {
    const gated = modelOf({ name: "gated", profiles: [{ engine: "vllm", source: "hf://org/gated@main", secret_env: { HF_TOKEN: "SERVER_HF_TOKEN" } }] });
    const gatedProfile = gated.profiles[0];
    if (!gatedProfile) throw new Error("no profile");
    const spec = buildReplicaSpec({ id: "gated-1", model: gated, profile: gatedProfile, cards: [0], gpuMemoryUtilization: 0.9, serverEnvironment: { SERVER_HF_TOKEN: "hf_secret_value" } });
    expect(spec.env).toEqual({ HF_TOKEN: "hf_secret_value" });
    expect(storableReplicaSpec(spec, gatedProfile).env).toEqual({ HF_TOKEN: "$SERVER_HF_TOKEN" });
    expect(() => buildReplicaSpec({ id: "gated-2", model: gated, profile: gatedProfile, cards: [0], gpuMemoryUtilization: 0.9, serverEnvironment: {} })).toThrow(/the server has no SERVER_HF_TOKEN set/);
  });

  it("sends agents mirror: sources resolved against the server's mirror, and stores them without the mirror's password", () => {
    const mirrored = modelOf({
      name: "mirrored",
      adapters: [{ name: "sql", source: "mirror:adapters/sql/" }],
      profiles: [{ engine: "llamacpp", source: "mirror:gguf/qwen-q4.gguf", memory_gb: 8 }],
    });
    const mirroredProfile = mirrored.profiles[0];
    if (!mirroredProfile) throw new Error("no profile");
    const mirror = "https://robot:s3cret@mirror.internal/models/";
    const spec = buildReplicaSpec({ id: "m-1", model: mirrored, profile: mirroredProfile, cards: [], gpuMemoryUtilization: 0.9, serverEnvironment: {}, mirror });
    expect(spec.source).toBe("https://robot:s3cret@mirror.internal/models/gguf/qwen-q4.gguf");
    expect(spec.adapters).toEqual([{ name: "sql", source: "https://robot:s3cret@mirror.internal/models/adapters/sql/" }]);
    const stored = JSON.stringify(storableReplicaSpec(spec, mirroredProfile));
    expect(stored).not.toContain("s3cret");
    expect(stored).toContain("mirror.internal/models/gguf/qwen-q4.gguf");
    expect(() => buildReplicaSpec({ id: "m-2", model: mirrored, profile: mirroredProfile, cards: [], gpuMemoryUtilization: 0.9, serverEnvironment: {} })).toThrow(/no mirror is configured/);
  });
});

