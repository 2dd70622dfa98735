import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates } from "./candidates.js";
import { checkpointTensors, syntheticGguf, syntheticGgufParts, writeBytes, writeSyntheticCheckpoint } from "./header-only-checkpoint.js";
import { readModelSource } from "./read-model-source.js";
import { renderPlanTable } from "./render-plan-table.js";
import { fixtureArchitecture, fixtureConfig } from "./testing/fixtures.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";

/**
 * Two ways real files are published that once planned wrong: a GGUF in parts
 * (counted from its first part alone, a 70B Q8_0 was said to fit one 80 GB
 * card) and a folder with only config.json and the safetensors index (what
 * `hf download --include "*.json"` leaves, to plan before a 140 GB download).
 */
let workspace: string;
let server: HubServer;
const llama70 = "Llama-3.3-70B-Instruct";
const q8FileType = 7;

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-parts-"));
  const architecture = fixtureArchitecture(llama70);
  await writeBytes(join(workspace, "whole", "llama-3.3-70b-Q8_0.gguf"), syntheticGguf(architecture, "Q8_0", q8FileType));
  const parts = syntheticGgufParts(architecture, "Q8_0", q8FileType, 3);
  for (const [index, bytes] of parts.entries()) {
    await writeBytes(join(workspace, "split", `llama-3.3-70b-Q8_0-0000${index + 1}-of-00003.gguf`), bytes);
    if (index !== 1) await writeBytes(join(workspace, "split-missing", `llama-3.3-70b-Q8_0-0000${index + 1}-of-00003.gguf`), bytes);
  }
  await writeSyntheticCheckpoint(join(workspace, "full"), fixtureConfig(llama70), checkpointTensors(architecture), 30);
  await mkdir(join(workspace, "index-only"), { recursive: true });
  for (const file of ["config.json", "model.safetensors.index.json"]) await copyFile(join(workspace, "full", file), join(workspace, "index-only", file));
  server = await startHubServer({ repositories: {}, mirrorRoot: workspace, token: "mirror-token" });
});

afterAll(async () => {
  await server.close();
  await rm(workspace, { recursive: true, force: true });
});

describe("a GGUF published in parts", () => {
  it("is counted from every part: the same parameters and bytes as the one-file GGUF", async () => {
    const whole = await readModelSource(join(workspace, "whole", "llama-3.3-70b-Q8_0.gguf"));
    const split = await readModelSource(join(workspace, "split", "llama-3.3-70b-Q8_0-00001-of-00003.gguf"));
    expect(split.parameters).toBe(whole.parameters);
    expect(split.checkpoint.bytes).toBe(whole.checkpoint.bytes);
    expect(split.ggufFileType).toBe("Q8_0");
    expect(split.provenance.parameters).toMatch(/all 3 parts/);
  });

  it("is read whole from a mirror URL too", async () => {
    const whole = await readModelSource(join(workspace, "whole", "llama-3.3-70b-Q8_0.gguf"));
    const split = await readModelSource(`${server.url}/mirror/split/llama-3.3-70b-Q8_0-00001-of-00003.gguf`, { hubEndpoint: server.url, hubToken: "mirror-token" });
    expect(split.checkpoint.bytes).toBe(whole.checkpoint.bytes);
  });

  it("leaves one 80 GB card almost no room at Q8_0 (about 75 GB of weights): 8k of context needs two", async () => {
    const facts = await readModelSource(join(workspace, "split", "llama-3.3-70b-Q8_0-00001-of-00003.gguf"));
    expect(facts.checkpoint.bytes).toBeGreaterThan(70e9);
    const plan = planCandidates(facts, fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0")), { context: 8192 });
    expect(plan.candidates.find((candidate) => candidate.gpus === 1)?.fits).toBe(false);
    expect(plan.candidates.find((candidate) => candidate.gpus === 2)?.fits).toBe(true);
  });

  it("names the part that is missing", async () => {
    await expect(readModelSource(join(workspace, "split-missing", "llama-3.3-70b-Q8_0-00001-of-00003.gguf"))).rejects.toMatchObject({
      code: "source_unreadable",
      message: expect.stringContaining("llama-3.3-70b-Q8_0-00002-of-00003.gguf: is missing or unreadable"),
      hint: expect.stringContaining("every part"),
    });
  });

  it("asks for the first part when given another", async () => {
    await expect(readModelSource(join(workspace, "split", "llama-3.3-70b-Q8_0-00003-of-00003.gguf"))).rejects.toMatchObject({
      code: "source_unreadable",
      hint: expect.stringContaining("first part"),
    });
  });
});

describe("a folder with config.json and the index but no shards", () => {
  it("is planned from the index within 1% of the full checkpoint, and the plan says so", async () => {
    const full = await readModelSource(join(workspace, "full"));
    const indexOnly = await readModelSource(join(workspace, "index-only"));
    expect(Math.abs(indexOnly.parameters - full.parameters) / full.parameters).toBeLessThan(0.01);
    expect(Math.abs(indexOnly.checkpoint.bytes - full.checkpoint.bytes) / full.checkpoint.bytes).toBeLessThan(0.01);
    expect(indexOnly.checkpoint.dtype).toBe("BF16");
    const plan = planCandidates(indexOnly, fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0")));
    expect(plan.architecture.parameters_from).toMatch(/index\.json total_size alone \(none of its \d+ shards are present; dtype BF16 from config\.json\)/);
    expect(renderPlanTable(plan)).toContain("parameters counted from model.safetensors.index.json total_size alone");
    // Llama-3.3-70B at bf16 fits two 80 GB cards: the same answer as from the full checkpoint.
    const fullPlan = planCandidates(full, fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0")));
    const fits = (candidates: typeof plan.candidates) => candidates.filter((candidate) => candidate.fits).map((candidate) => `${candidate.quantization}/${candidate.gpus}`);
    expect(fits(plan.candidates)).toEqual(fits(fullPlan.candidates));
  });

  it("is planned from the index on a mirror, where a missing shard is a 404", async () => {
    const full = await readModelSource(join(workspace, "full"));
    const remote = await readModelSource(`${server.url}/mirror/index-only/`, { hubEndpoint: server.url, hubToken: "mirror-token" });
    expect(remote.checkpoint.bytes).toBe((await readModelSource(join(workspace, "index-only"))).checkpoint.bytes);
    expect(Math.abs(remote.parameters - full.parameters) / full.parameters).toBeLessThan(0.01);
  });

  it("still refuses a cut download: some shards present, others missing", async () => {
    const folder = join(workspace, "cut");
    await mkdir(folder, { recursive: true });
    for (const file of ["config.json", "model.safetensors.index.json", "model-00001-of-00030.safetensors"]) await copyFile(join(workspace, "full", file), join(folder, file));
    await expect(readModelSource(folder)).rejects.toMatchObject({ code: "source_unreadable", message: expect.stringContaining("missing") });
  });
});
