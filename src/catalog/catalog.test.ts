import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { refusalOf as failure } from "../../test/support/refusal.js";
import { buildCatalog, type PlacedEntry } from "./build-catalog.js";
import { parseModelFile } from "./model-file.js";
import { profileSchema, type ModelEntry } from "./schema.js";
import { loadServerConfig } from "./server-config.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";

function writeConfig(text: string): string {
  const directory = temporaryDirectory("llmgw-config-");
  const file = path.join(directory, "server.yaml");
  writeFileSync(file, text);
  return file;
}

const runtime = (entry: ModelEntry): PlacedEntry => ({ entry, source: "runtime", place: `runtime model ${entry.name}` });
const vllmProfile = { engine: "vllm" as const, source: "https://mirror.example/m/" };

describe("server.yaml", () => {
  it("reads declared models with every default filled in", () => {
    const file = writeConfig(`
models:
  - name: qwen2.5-7b
    profiles:
      - { engine: vllm, source: "https://mirror.example/qwen/", gpu_class: h100 }
      - { engine: llamacpp, source: /models/qwen.gguf, slots: 4 }
`);
    const config = loadServerConfig(file);
    const model = buildCatalog(config.declared).models[0];
    expect(model?.scaling).toEqual({ min: 1, max: 1, idle_timeout: "10m" });
    expect(model?.class).toBe("standard");
    expect(model?.profiles.map((profile) => [profile.name, profile.gpus, profile.slots])).toEqual([
      ["vllm", 1, 1],
      ["llamacpp", 0, 4],
    ]);
    expect(config.listen).toEqual({ host: "127.0.0.1", port: 8080 });
  });

  it("names file, line and column for malformed YAML", () => {
    const file = writeConfig("models:\n  - name: a\n    profiles: [\n");
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toMatch(/^server\.yaml:\d+:\d+: /);
  });

  it("names an unknown key with its line and suggests the nearest known one", () => {
    const file = writeConfig(`models:
  - name: a
    profiles:
      - engine: vllm
        source: x
        gpu: 2
`);
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("unknown_key");
    expect(error.message).toContain('server.yaml:6:9: models[0].profiles[0].gpu: unknown key "gpu" (did you mean "gpus"?)');
  });

  it("names the path and what is expected for a wrong type or range", () => {
    const file = writeConfig(`models:
  - name: a
    profiles:
      - { engine: vllm, source: x, gpus: 1.5 }
`);
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("invalid_input");
    expect(error.message).toContain("models[0].profiles[0].gpus: a whole number of cards, 0 to 64");
    expect(error.message).toMatch(/server\.yaml:4:\d+/);
  });

  it("refuses an unknown engine, listing the ones there are", () => {
    const file = writeConfig(`models:
  - name: a
    profiles: [{ engine: ollama, source: x }]
`);
    const error = failure(() => loadServerConfig(file));
    expect(error.message).toContain("models[0].profiles[0].engine: one of vllm, sglang, trtllm, llamacpp, comfyui");
  });

  it("offers the engine a misspelt one was meant to be", () => {
    const file = writeConfig(`models:
  - name: a
    profiles: [{ engine: vlm, source: x }]
`);
    expect(failure(() => loadServerConfig(file)).message).toContain('engine: one of vllm, sglang, trtllm, llamacpp, comfyui (did you mean "vllm"?)');
  });

  it("refuses a duplicate model name, naming both places", () => {
    const file = writeConfig(`models:
  - { name: a, profiles: [{ engine: vllm, source: x }] }
  - { name: a, profiles: [{ engine: vllm, source: y }] }
`);
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("name_taken");
    expect(error.message).toContain("server.yaml:3");
    expect(error.message).toContain("server.yaml models[0] (a)");
  });

  it("refuses a fallback cycle, drawing the circle", () => {
    const file = writeConfig(`models:
  - { name: a, fallbacks: [b], profiles: [{ engine: vllm, source: x }] }
  - { name: b, fallbacks: [c], profiles: [{ engine: vllm, source: x }] }
  - { name: c, fallbacks: [a], profiles: [{ engine: vllm, source: x }] }
`);
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("fallback_cycle");
    expect(error.message).toContain("a → b → c → a");
  });

  it("says when the file is missing", () => {
    const error = failure(() => loadServerConfig("/nonexistent/server.yaml"));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain("cannot read /nonexistent/server.yaml: no such file");
  });

  it("accepts only postgres:// database URLs", () => {
    expect(failure(() => loadServerConfig(undefined, { database: "mysql://x" })).message).toContain("only postgres:// URLs");
  });
});

describe("the catalog as a whole", () => {
  it("keeps models, aliases and adapters in one namespace", () => {
    const error = failure(() =>
      buildCatalog([
        runtime({ name: "a", aliases: ["chat"], profiles: [vllmProfile] }),
        runtime({ name: "b", adapters: [{ name: "chat", source: "x" }], profiles: [vllmProfile] }),
      ]),
    );
    expect(error.code).toBe("name_taken");
    expect(error.message).toContain('"chat" (adapter) is already the alias of runtime model a');
  });

  it("refuses a fallback that does not exist", () => {
    const error = failure(() => buildCatalog([runtime({ name: "a", fallbacks: ["ghost"], profiles: [vllmProfile] })]));
    expect(error.code).toBe("unknown_fallback");
    expect(error.message).toContain('runtime model a.fallbacks[0]: "ghost" is not a model in the catalog');
  });

  it("refuses a model that falls back to itself", () => {
    expect(failure(() => buildCatalog([runtime({ name: "a", fallbacks: ["a"], profiles: [vllmProfile] })])).code).toBe("fallback_cycle");
  });

  it("refuses a GPU engine with no cards and ComfyUI on two", () => {
    const error = failure(() =>
      buildCatalog([
        runtime({ name: "a", profiles: [{ ...vllmProfile, gpus: 0 }] }),
        runtime({
          name: "b",
          profiles: [{ engine: "comfyui", source: "x", gpus: 2, comfy: { outputs: "images", inputs: { prompt: "6.inputs.text" }, workflow: { "6": { class_type: "CLIPTextEncode", inputs: { text: "" } } } } }],
        }),
      ]),
    );
    expect(error.code).toBe("invalid_profile");
    expect(error.details.map((detail) => detail.message)).toEqual([
      "vllm runs on GPUs only: 1 or more cards (use engine: llamacpp to run on CPUs)",
      "comfyui uses one card; set gpus: 1",
    ]);
  });

  it("takes nodes for vllm and sglang, defaulting to one, with gpus counted per node", () => {
    const catalog = buildCatalog([
      runtime({ name: "big", profiles: [{ ...vllmProfile, gpus: 8, nodes: 2 }, { engine: "sglang", source: "https://mirror.example/m/", gpus: 8, nodes: 2 }] }),
      runtime({ name: "small", profiles: [vllmProfile] }),
    ]);
    expect(catalog.models[0]?.profiles.map((profile) => [profile.engine, profile.nodes, profile.gpus])).toEqual([
      ["vllm", 2, 8],
      ["sglang", 2, 8],
    ]);
    expect(catalog.models[1]?.profiles[0]?.nodes).toBe(1);
  });

  it("refuses nodes by name for the engines that cannot span machines here, saying which can", () => {
    const error = failure(() =>
      buildCatalog([
        runtime({ name: "a", profiles: [{ engine: "llamacpp", source: "x.gguf", gpus: 1, nodes: 2 }] }),
        runtime({ name: "b", profiles: [{ engine: "trtllm", source: "y", gpus: 8, nodes: 2 }] }),
      ]),
    );
    expect(error.code).toBe("invalid_profile");
    expect(error.details.map((detail) => detail.message)).toEqual([
      "llama.cpp spans machines only through its RPC servers, which llmgw does not run; use vllm or sglang (or nodes: 1)",
      "TensorRT-LLM spans machines through MPI launchers, which llmgw does not run; use vllm or sglang (or nodes: 1)",
    ]);
    const tooMany = profileSchema.safeParse({ ...vllmProfile, gpus: 8, nodes: 9 });
    expect(tooMany.success).toBe(false);
    expect(tooMany.error?.issues[0]?.message).toMatch(/past 8 nodes the network, not the cards, bounds a replica/);
  });

  it("refuses a quantization the engine does not take", () => {
    const error = failure(() => buildCatalog([runtime({ name: "a", profiles: [{ engine: "llamacpp", source: "x.gguf", quantization: "awq" }] })]));
    expect(error.message).toContain("llamacpp takes one of F32, F16");
  });

  it("refuses a source no agent could fetch when the model is added, naming its place and the forms it takes", () => {
    const error = failure(() =>
      buildCatalog([
        runtime({
          name: "a",
          origin: "s3://bucket/qwen",
          adapters: [{ name: "a-sql", source: "mirror:../outside/" }],
          profiles: [{ engine: "vllm", source: "ftp://mirror.example/qwen/" }],
        }),
      ]),
    );
    const where = error.details.map((detail) => `${detail.where}: ${detail.message}`).join("\n");
    expect(where).toContain("origin: uses a scheme llmgw cannot fetch; give an http(s) URL");
    expect(where).toContain("adapters[0].source: must name a path inside the mirror");
    expect(where).toContain("profiles[0].source: uses a scheme llmgw cannot fetch");
    expect(() => buildCatalog([runtime({ name: "b", origin: "hf://Qwen/Qwen2.5-7B-Instruct@a09a354", profiles: [{ engine: "vllm", source: "mirror:qwen2.5-7b/" }] })])).not.toThrow();
  });

  it("refuses max below min and a model with neither profiles nor external", () => {
    expect(failure(() => buildCatalog([runtime({ name: "a", scaling: { min: 3, max: 1 }, profiles: [vllmProfile] })])).message).toContain(
      "scaling.max: must be at least min (3)",
    );
    expect(failure(() => buildCatalog([runtime({ name: "a" })])).message).toContain("required: at least one profile");
  });

  it("compares max with the min in force, so max 0 alone is refused and says how to keep a model unplaced", () => {
    const error = failure(() => buildCatalog([runtime({ name: "a", scaling: { max: 0 }, profiles: [vllmProfile] })]));
    expect(error.message).toContain("scaling.max: must be at least min (1, the default)");
    expect(error.message).toContain("min: 0, max: 0 keeps a model in the catalog unplaced");
    expect(buildCatalog([runtime({ name: "b", scaling: { min: 0, max: 0 }, profiles: [vllmProfile] })]).models[0]?.scaling).toMatchObject({ min: 0, max: 0 });
  });

  it("refuses adapters on a model with a profile whose engine cannot attach them", () => {
    const error = failure(() =>
      buildCatalog([runtime({ name: "a", adapters: [{ name: "sql", source: "x" }], profiles: [vllmProfile, { engine: "trtllm", source: "y" }] })]),
    );
    expect(error.code).toBe("invalid_profile");
    expect(error.message).toContain("profiles[1].engine: trtllm cannot attach LoRA adapters");
  });

  it("takes every GGUF type llama.cpp writes and vLLM's quantization methods by name", () => {
    const catalog = buildCatalog([
      runtime({ name: "a", profiles: [{ engine: "llamacpp", source: "x.gguf", quantization: "IQ3_M" }] }),
      runtime({ name: "b", profiles: [{ engine: "vllm", source: "y", quantization: "awq_marlin" }] }),
    ]);
    expect(catalog.models.map((model) => model.profiles[0]?.quantization)).toEqual(["IQ3_M", "awq_marlin"]);
  });

  it("makes an on-demand model opportunistic unless its class is set", () => {
    const catalog = buildCatalog([
      runtime({ name: "a", scaling: { min: 0, max: 2 }, profiles: [vllmProfile] }),
      runtime({ name: "b", class: "critical", scaling: { min: 0 }, profiles: [vllmProfile] }),
    ]);
    expect(catalog.models.map((model) => [model.class, model.class_set, model.scaling.max])).toEqual([
      ["opportunistic", false, 2],
      ["critical", true, 1],
    ]);
  });
});

describe("model files for `ctl model add -f`", () => {
  it("reads one entry, or one entry copied whole from server.yaml", () => {
    expect(parseModelFile("name: a\nprofiles: [{engine: vllm, source: x}]\n", "a.yaml").name).toBe("a");
    expect(parseModelFile("models:\n  - name: b\n    profiles: [{engine: vllm, source: x}]\n", "b.yaml").name).toBe("b");
  });

  it("names the file and line of a problem", () => {
    const error = failure(() => parseModelFile("name: a\nprofiles:\n  - engine: vllm\n    source: x\n    slot: 2\n", "a.yaml"));
    expect(error.message).toContain('a.yaml:5:5: profiles[0].slot: unknown key "slot" (did you mean "slots"?)');
  });
});

describe("the gateway's settings", () => {
  it("refuses a routing mode it does not know and a queue deadline of zero, naming each", () => {
    const error = failure(() => parseModelFile("name: m\nqueue_timeout: 0s\nprofiles:\n  - { engine: vllm, source: https://mirror.example/m/ }\n", "m.yaml"));
    expect(error.message).toMatch(/m\.yaml:2:\d+: queue_timeout: .*1s/);
    const file = writeConfig(`
gateway: { auth: opne }
models:
  - name: m
    routing: fastest
    profiles: [{ engine: vllm, source: "https://mirror.example/m/" }]
`);
    const refused = failure(() => loadServerConfig(file));
    const text = [refused.message, ...refused.details.map((detail) => `${detail.where}: ${detail.message}`)].join("\n");
    expect(text).toContain("keys (gateway API keys) or open");
    expect(text).toContain("least (fewest in flight), prefix (same prompt start, same replica) or cache");
  });

  it("reads gateway.auth, keys by default", () => {
    expect(loadServerConfig(writeConfig("gateway: { auth: open }\n")).gatewayAuth).toBe("open");
    expect(loadServerConfig(writeConfig("listen: 127.0.0.1:9000\n")).gatewayAuth).toBe("keys");
  });

  it("reads gateway.usage_sync, write by default, and refuses another value with its line and both choices", () => {
    expect(loadServerConfig(writeConfig("gateway: { usage_sync: disk }\n")).usageSync).toBe("disk");
    expect(loadServerConfig(writeConfig("listen: 127.0.0.1:9000\n")).usageSync).toBe("write");
    const refused = failure(() => loadServerConfig(writeConfig("gateway:\n  usage_sync: fsync\n")));
    const text = [refused.message, ...refused.details.map((detail) => `${detail.where}: ${detail.message}`)].join("\n");
    expect(text).toMatch(/:2:\d+: gateway\.usage_sync: write \(each answer's usage written before it ends, not synced.*\) or disk \(synced too\)/);
  });
});
