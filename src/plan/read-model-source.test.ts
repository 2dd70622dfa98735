import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates } from "./candidates.js";
import { readModelSource } from "./read-model-source.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { checkpointTensors, safetensorsHeaderBytes, syntheticGguf, writeBytes, writeSyntheticCheckpoint } from "./header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "./testing/fixtures.js";
import { inventoryParameters, tensorInventory } from "./tensor-inventory.js";
import { weightsBytes } from "./weights.js";

let workspace: string;
let server: HubServer;
const token = "mirror-token-not-hf-style";
const qwen = "Qwen2.5-7B-Instruct";
const qwenParameters = 7_615_616_512;

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-read-"));
  const tensors = checkpointTensors(fixtureArchitecture(qwen));
  await writeSyntheticCheckpoint(join(workspace, "sharded"), fixtureConfig(qwen), tensors, 4);
  await writeSyntheticCheckpoint(join(workspace, "single"), fixtureConfig(qwen), tensors, 1);
  await writeBytes(join(workspace, "gguf", "llama-3.1-8b-Q4_K_M.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
  server = await startHubServer({
    repositories: { "Qwen/Qwen2.5-7B-Instruct": join(workspace, "sharded") },
    mirrorRoot: workspace,
    token,
    basicLogin: "robot:s3cret",
  });
});

afterAll(async () => {
  await server.close();
  await rm(workspace, { recursive: true, force: true });
});

describe("readModelSource", () => {
  it("reads a local folder with an index, from the shard headers", async () => {
    const facts = await readModelSource(join(workspace, "sharded"));
    expect(facts.parameters).toBe(qwenParameters);
    expect(facts.checkpoint).toMatchObject({ format: "safetensors", dtype: "BF16", bytes: qwenParameters * 2 });
    expect(facts.provenance.parameters).toMatch(/^headers of 4 shards named in model.safetensors.index.json/);
    expect(facts.architecture.kvHeads).toBe(4);
  });

  it("reads a local folder with one model.safetensors", async () => {
    const facts = await readModelSource(join(workspace, "single"));
    expect(facts.parameters).toBe(qwenParameters);
    expect(facts.provenance.parameters).toMatch(/^header of model.safetensors/);
  });

  it("resolves an HF id against a hub endpoint, with a token that is not hf_-style", async () => {
    const facts = await readModelSource("Qwen/Qwen2.5-7B-Instruct@main", { hubEndpoint: server.url, hubToken: token });
    expect(facts.parameters).toBe(qwenParameters);
    expect(facts.provenance.architecture).toBe(`config.json of Qwen/Qwen2.5-7B-Instruct@main via ${server.url}`);
    expect(server.requests.some((path) => path.startsWith("/api/models/Qwen/Qwen2.5-7B-Instruct/tree/main"))).toBe(true);
    expect(server.requests.some((path) => path.startsWith("/Qwen/Qwen2.5-7B-Instruct/resolve/main/model-00001-of-00004.safetensors"))).toBe(true);
  });

  it("explains a missing token at the hub, naming the server's setting by default", async () => {
    await expect(readModelSource("Qwen/Qwen2.5-7B-Instruct", { hubEndpoint: server.url })).rejects.toMatchObject({
      code: "source_unreadable",
      message: expect.stringContaining("401"),
      hint: expect.stringContaining("server.yaml huggingface.token_env"),
    });
  });

  it("names the settings of whoever reads the hub: the CLI's flag and environment when it plans by itself", async () => {
    const hubSettings = { endpoint: "--hub-endpoint or HF_ENDPOINT", token: "HF_TOKEN" };
    await expect(readModelSource("Qwen/Qwen2.5-7B-Instruct", { hubEndpoint: server.url, hubSettings })).rejects.toMatchObject({
      hint: expect.stringContaining("(HF_TOKEN)"),
    });
    await expect(readModelSource("Qwen/Qwen2.5-7B-Instruct", { hubEndpoint: "http://127.0.0.1:9", hubSettings })).rejects.toMatchObject({
      code: "source_unreadable",
      hint: "Check the hub endpoint (--hub-endpoint or HF_ENDPOINT) and that it is reachable.",
    });
  });

  it("says when the hub does not know the model", async () => {
    await expect(readModelSource("Nobody/Nothing", { hubEndpoint: server.url, hubToken: token })).rejects.toMatchObject({
      code: "source_unreadable",
    });
  });

  it("reads a folder on an HTTP mirror with Range requests", async () => {
    const facts = await readModelSource(`${server.url}/mirror/sharded/`, { hubEndpoint: server.url, hubToken: token });
    expect(facts.parameters).toBe(qwenParameters);
  });

  it("logs in to a mirror with the user and password in its URL, and never repeats the password", async () => {
    const withLogin = server.url.replace("http://", "http://robot:s3cret@");
    expect((await readModelSource(`${withLogin}/mirror/sharded/`, { hubEndpoint: "https://hub.example" })).parameters).toBe(qwenParameters);
    const gguf = await readModelSource(`${withLogin}/mirror/gguf/llama-3.1-8b-Q4_K_M.gguf`, { hubEndpoint: "https://hub.example" });
    expect(gguf.ggufFileType).toBe("Q4_K_M");
    const refused = readModelSource(`${server.url.replace("http://", "http://robot:wrong-pass@")}/mirror/sharded/`, { hubEndpoint: "https://hub.example" });
    await expect(refused).rejects.toMatchObject({ code: "source_unreadable", message: expect.stringContaining("401") });
    await expect(refused).rejects.toMatchObject({ message: expect.not.stringContaining("wrong-pass") });
  });

  it("sends the hub token only to the hub endpoint's origin", async () => {
    await expect(
      readModelSource(`${server.url}/mirror/sharded/`, { hubEndpoint: "https://mirror.example", hubToken: token }),
    ).rejects.toMatchObject({ code: "source_unreadable", message: expect.stringContaining("401") });
  });

  it("reads a local GGUF file: architecture from metadata, parameters from tensor shapes, its own type", async () => {
    const architecture = fixtureArchitecture("Llama-3.1-8B");
    const facts = await readModelSource(join(workspace, "gguf", "llama-3.1-8b-Q4_K_M.gguf"));
    const parameters = inventoryParameters(tensorInventory(architecture));
    expect(facts.parameters).toBe(parameters);
    expect(facts.ggufFileType).toBe("Q4_K_M");
    expect(facts.checkpoint.bytes).toBe(weightsBytes(architecture, parameters, "Q4_K_M"));
    expect(facts.architecture).toMatchObject({ layers: 32, attentionHeads: 32, kvHeads: 8, headDim: 128, trainedContext: 131072, tiedEmbeddings: false });
  });

  it("plans a GGUF source with llama.cpp at its own type only, priced at its stored bytes", async () => {
    const facts = await readModelSource(join(workspace, "gguf", "llama-3.1-8b-Q4_K_M.gguf"));
    const plan = planCandidates(facts, fleetFromHardwareSpec(parseHardwareSpec("1xL4-24GB@pcie,cpu:8c/16g")));
    expect(new Set(plan.candidates.map((candidate) => `${candidate.engine} ${candidate.quantization}`))).toEqual(new Set(["llamacpp Q4_K_M"]));
    const cpu = plan.candidates.find((candidate) => candidate.gpus === 0);
    expect(cpu?.weights_bytes_per_card).toBe(facts.checkpoint.bytes);
    expect(plan.candidates.every((candidate) => candidate.fits)).toBe(true);
  });

  it("reads a GGUF file by URL", async () => {
    const facts = await readModelSource(`${server.url}/mirror/gguf/llama-3.1-8b-Q4_K_M.gguf`, { hubEndpoint: server.url, hubToken: token });
    expect(facts.ggufFileType).toBe("Q4_K_M");
    expect(facts.architecture.layers).toBe(32);
  });

  it("names the missing field and the file", async () => {
    const folder = join(workspace, "broken");
    const config = { ...(fixtureConfig(qwen) as Record<string, unknown>) };
    delete config.num_attention_heads;
    await writeSyntheticCheckpoint(folder, config, [], 1);
    await expect(readModelSource(folder)).rejects.toMatchObject({
      code: "architecture_field_missing",
      message: expect.stringMatching(/config\.json of .*broken has no num_attention_heads/),
    });
  });

  it("refuses a folder without weights metadata", async () => {
    const folder = join(workspace, "config-only");
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, "config.json"), JSON.stringify(fixtureConfig(qwen)));
    await expect(readModelSource(folder)).rejects.toMatchObject({ code: "weights_metadata_missing" });
  });

  it("counts an AWQ checkpoint's packed int4 weights as parameters, not its scales", async () => {
    const folder = join(workspace, "awq");
    await mkdir(folder, { recursive: true });
    await writeFile(
      join(folder, "config.json"),
      JSON.stringify({ ...(fixtureConfig(qwen) as object), quantization_config: { quant_method: "awq", bits: 4, group_size: 128 } }),
    );
    await writeFile(
      join(folder, "model.safetensors"),
      safetensorsHeaderBytes([
        { name: "model.layers.0.mlp.up_proj.qweight", dtype: "I32", shape: [3584, 18944 / 8] },
        { name: "model.layers.0.mlp.up_proj.qzeros", dtype: "I32", shape: [28, 18944 / 8] },
        { name: "model.layers.0.mlp.up_proj.scales", dtype: "F16", shape: [28, 18944] },
        { name: "model.embed_tokens.weight", dtype: "F16", shape: [152064, 3584] },
      ]),
    );
    const facts = await readModelSource(folder);
    expect(facts.parameters).toBe(3584 * 18944 + 152064 * 3584);
    expect(facts.checkpoint.quantization).toBe("int4");
  });

  it("reads the catalog's own source strings: hf://Org/Name@rev and mirror:path", async () => {
    const hub = await readModelSource("hf://Qwen/Qwen2.5-7B-Instruct@main", { hubEndpoint: server.url, hubToken: token });
    expect(hub.parameters).toBe(qwenParameters);
    const mirrored = await readModelSource("mirror:sharded/", { mirror: `${server.url}/mirror/`, hubEndpoint: server.url, hubToken: token });
    expect(mirrored.parameters).toBe(qwenParameters);
    const onDisk = await readModelSource("mirror:gguf/llama-3.1-8b-Q4_K_M.gguf", { mirror: workspace });
    expect(onDisk.ggufFileType).toBe("Q4_K_M");
  });

  it("refuses a URL of one file that is not a GGUF, saying a folder ends in /", async () => {
    await expect(readModelSource(`${server.url}/mirror/sharded`, { hubEndpoint: server.url, hubToken: token })).rejects.toMatchObject({
      code: "source_unreadable",
      hint: expect.stringContaining("ends in /"),
    });
  });

  it("refuses a folder with no config.json, naming the GGUF files below it rather than planning one of them", async () => {
    const folder = join(workspace, "gguf-only");
    await writeBytes(join(folder, "Q4", "model-Q4_K_M.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
    const refusal = readModelSource(folder);
    await expect(refusal).rejects.toMatchObject({
      code: "source_unreadable",
      message: expect.stringContaining("not found; the folder holds 1 GGUF file: Q4/model-Q4_K_M.gguf"),
      hint: expect.stringContaining(`${folder}/Q4/model-Q4_K_M.gguf`),
    });
    await writeBytes(join(folder, "mmproj-f16.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
    await expect(readModelSource(folder)).rejects.toMatchObject({ message: expect.stringContaining("holds 2 GGUF files") });
    const named = await readModelSource(join(folder, "Q4", "model-Q4_K_M.gguf"));
    expect(named.ggufFileType).toBe("Q4_K_M");
  });

  it("refuses a folder with neither config.json nor GGUF files, saying what a model folder needs", async () => {
    const folder = join(workspace, "empty");
    await mkdir(folder, { recursive: true });
    await expect(readModelSource(folder)).rejects.toMatchObject({ code: "source_unreadable", hint: expect.stringContaining("config.json") });
  });

  it("refuses what is neither an HF id, a URL, a folder nor a GGUF file", async () => {
    await expect(readModelSource("not a model")).rejects.toMatchObject({ code: "source_unreadable" });
    await expect(readModelSource("./missing.gguf")).rejects.toMatchObject({ code: "source_unreadable" });
  });
});
