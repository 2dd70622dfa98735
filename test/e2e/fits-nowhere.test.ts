import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointTensors, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../src/plan/testing/fixtures.js";
import type { ModelView } from "../../src/protocol/views.js";
import { startCluster, type Cluster } from "../support/cluster.js";

/**
 * "Fits nowhere in this fleet" against "no room now", as real processes: one
 * node with two H100s, a 70B model in bf16 (a header-only checkpoint of the
 * real config, read as a download would be) on one card, and a small model
 * that fits a card that is taken.
 */
describe("a model that fits nowhere is refused with nothing stored; one with no room now is stored", () => {
  let cluster: Cluster;
  let llama70: string;
  const big = (name: string) => `name: ${name}\ncontext: 8192\nprofiles:\n  - { engine: vllm, source: "${llama70}", gpu_class: h100, gpus: 1 }\n`;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-fits-nowhere-", ["node-a"], { "node-a": "2xH100-80GB@nvl0,cpu:16c/64g" });
    llama70 = path.join(cluster.directory, "Llama-3.3-70B-Instruct");
    await writeSyntheticCheckpoint(llama70, fixtureConfig("Llama-3.3-70B-Instruct"), checkpointTensors(fixtureArchitecture("Llama-3.3-70B-Instruct")), 4);
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  const names = async () => (await cluster.api<{ models: ModelView[] }>("GET", "/api/v1/models")).models.map((model) => model.name);

  it("refuses a model too large for every card of its class even empty, with the planner's figures, and stores nothing", async () => {
    const refused = await cluster.ctlRaw("model", "add", "-f", await written("big", big("big")));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/big fits nowhere in this fleet, even on nodes with every card free: profile vllm \(vllm, 1 card\): its card would need \d+\.\d GiB \(\d+\.\d GiB weights, .*\); the largest h100 card has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\): \d+\.\d GiB short; nothing was stored/);
    expect(refused.stderr).toContain("Freeing cards cannot help");
    expect(refused.stderr).toContain("--keep-unplaceable");
    expect(await names()).not.toContain("big");
  });

  it("stores it when asked to keep it", async () => {
    const kept = await cluster.ctlRaw("model", "add", "-f", await written("kept", big("kept")), "--keep-unplaceable");
    expect(kept.code, kept.stderr).toBe(0);
    expect(await names()).toContain("kept");
    await cluster.ctl("model", "remove", "kept");
  });

  it("stores a model with no room now, and --wait says it stays and what would free room", async () => {
    await cluster.ctl("model", "add", "-f", await written("wide", `name: wide\nprofiles:\n  - { engine: vllm, source: "hf://example/wide@main", gpu_class: h100, gpus: 2 }\n`), "--no-source-check", "--wait");
    const waited = await cluster.ctlRaw("model", "add", "-f", await written("late", `name: late\nprofiles:\n  - { engine: vllm, source: "hf://example/late@main", gpu_class: h100, gpus: 1 }\n`), "--no-source-check", "--wait");
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain("late cannot be placed now: 0 of 1 node: 1 has no free h100");
    expect(waited.stderr).toContain("It stays in the catalog, and the reconciler places it when room comes");
    expect(await names()).toContain("late");
  });

  const written = async (name: string, yaml: string) => {
    const file = path.join(cluster.directory, `${name}.yaml`);
    writeFileSync(file, yaml);
    return file;
  };
});
