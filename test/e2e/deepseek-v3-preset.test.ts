import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeDeepSeekV3Checkpoint } from "../../src/demo/deepseek-v3-checkpoint.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import { serverYaml, startCluster, type Cluster } from "../support/cluster.js";
import { runCli } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * The deepseek-v3 preset through `llmgw ctl`, against a real server whose
 * hub is the demo's stand-in for deepseek-ai/DeepSeek-V3 (its real
 * config.json and its 163-shard FP8 layout) and whose fleet is one node of
 * eight H100s: the plan of two such nodes, the miss of one, and the refusal
 * to add a model this fleet cannot place.
 */
describe("the deepseek-v3 preset against a server", () => {
  let hub: HubServer;
  let cluster: Cluster;

  beforeAll(async () => {
    hub = await startHubServer({ repositories: { "deepseek-ai/DeepSeek-V3": await writeDeepSeekV3Checkpoint(temporaryDirectory("llmgw-deepseek-hub-")) } });
    cluster = await startCluster("llmgw-deepseek-", ["gpu-node-1"], { "gpu-node-1": "8xH100-80GB@ib0,cpu:64c/1024g" }, `${serverYaml}huggingface:\n  endpoint: ${hub.url}\n`);
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    await hub?.close();
  });

  it("plans it over two nodes of 8 H100s on one fabric, and says what one node is short", async () => {
    const two = await runCli(["ctl", "model", "plan", "deepseek-ai/DeepSeek-V3", "--gpus", "2x8xH100-80GB@ib0", "--hub-endpoint", hub.url, "--json"]);
    expect(two.code, two.stderr).toBe(0);
    const plan = JSON.parse(two.stdout) as { candidates: { engine: string; quantization: string; gpus: number; nodes: number; fits: boolean; parallel?: { tensor: number; pipeline: number } }[] };
    expect(plan.candidates.filter((candidate) => candidate.fits).map((candidate) => [candidate.engine, candidate.quantization, candidate.nodes, candidate.gpus])).toContainEqual([
      "vllm",
      "fp8",
      2,
      8,
    ]);
    const table = await runCli(["ctl", "model", "plan", "deepseek-ai/DeepSeek-V3", "--gpus", "2x8xH100-80GB@ib0", "--hub-endpoint", hub.url]);
    // vLLM: 8 cards of tensor parallel on each of 2 nodes, a pipeline stage each; the busiest card holds the first stage's 44.9 GB.
    expect(table.stdout).toMatch(/^yes\s+h100-80G@ib0 16\/16 free\s+vllm\s+fp8\s+2×8 tp8 pp2\s+41\.8 GiB/m);

    // The server's own fleet: one node of eight, so no candidate fits, and the table says what is short.
    const live = await cluster.ctlRaw("model", "plan", "deepseek-ai/DeepSeek-V3");
    expect(live.code, live.stderr).toBe(0);
    expect(live.stdout).toContain("13.0 GiB short before any KV cache");
  });

  it("refuses to add it on a fleet without two nodes of 8, saying what each profile lacks, and stores nothing", async () => {
    const refused = await cluster.ctlRaw("model", "add", "deepseek-v3");
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toContain(
      "deepseek-v3 fits nowhere in this fleet, even on nodes with every card free: " +
        "profile one-node (vllm, 8 cards): each of its 8 cards would need 87.1 GiB",
    );
    expect(refused.stderr).toContain("the largest h100 card has 72.0 GiB usable (0.90 of 80.0 GiB)");
    expect(refused.stderr).toContain("profile two-nodes: spans 2 nodes of 8 GPU cards on one fabric; the most this fleet has is 1 (h100 on ib0); nothing was stored");
    const models = JSON.parse(await cluster.ctl("models", "--json")) as { models: { name: string }[] };
    expect(models.models.map((model) => model.name)).not.toContain("deepseek-v3");
  });
});
