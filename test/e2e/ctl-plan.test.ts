import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureArchitecture, fixtureConfig, fixturesFolder } from "../../src/plan/testing/fixtures.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import type { Plan } from "../../src/plan/index.js";
import { runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const fixtureModels = readdirSync(fixturesFolder);
const whatIf = "2xH100-80GB@nvl0,4xL40S-48GB@pcie,cpu:32c/256g";

describe("llmgw ctl model plan", () => {
  let checkpoints: string;
  let server: ServerProcess;

  beforeAll(async () => {
    checkpoints = temporaryDirectory("llmgw-plan-");
    // Each fixture's real config.json beside header-only safetensors shards: the planner reads them as it would a download.
    for (const name of fixtureModels) {
      await writeSyntheticCheckpoint(path.join(checkpoints, name), fixtureConfig(name), checkpointTensors(fixtureArchitecture(name)), 4);
    }
    server = await startServerProcess();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each(fixtureModels)("answers for %s against a what-if fleet, with no server", async (name) => {
    const result = await runCli(["ctl", "--server", "http://127.0.0.1:9", "model", "plan", path.join(checkpoints, name), "--gpus", whatIf, "--json"]);
    expect(result.stderr).toBe("");
    const plan = JSON.parse(result.stdout) as Plan;
    expect(plan.architecture.parameters).toBeGreaterThan(1e9);
    expect(plan.candidates.length).toBeGreaterThan(0);
    for (const candidate of plan.candidates) {
      expect(candidate.fits).toBe(candidate.max_context > 0 && (candidate.short === undefined || candidate.short.length === 0));
    }
  });

  it("finds Llama-3.3-70B at bf16 on two 80 GB cards, in a table a person can read", async () => {
    const result = await runCli(["ctl", "model", "plan", path.join(checkpoints, "Llama-3.3-70B-Instruct"), "--gpus", "2xH100-80GB@nvl0"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/70\.\d\dB parameters/);
    expect(result.stdout).toMatch(/^yes\s+h100-80G@nvl0 2\/2 free\s+vllm\s+bf16\s+2\s/m);
  });

  it("points a what-if plan whose hub fails at --hub-endpoint / HF_ENDPOINT, not at the server's file", async () => {
    const result = await runCli(["ctl", "model", "plan", "Qwen/Qwen2.5-7B-Instruct", "--gpus", "1xH100-80GB", "--hub-endpoint", "http://127.0.0.1:9"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Check the hub endpoint (--hub-endpoint or HF_ENDPOINT)");
    expect(result.stderr).not.toContain("server.yaml");
  });

  it("says what is short, and by how much, when asked for more context than fits", async () => {
    const result = await runCli(["ctl", "model", "plan", path.join(checkpoints, "Llama-3.3-70B-Instruct"), "--gpus", "1xH100-80GB", "--context", "131072", "--json"]);
    const plan = JSON.parse(result.stdout) as Plan;
    const bf16 = plan.candidates.find((candidate) => candidate.engine === "vllm" && candidate.quantization === "bf16" && candidate.gpus === 1);
    expect(bf16?.fits).toBe(false);
    expect(bf16?.short?.join(" ")).toMatch(/GiB/);
  });

  it("plans on the server, which reads the source itself, and says when no nodes have joined", async () => {
    const source = path.join(checkpoints, "Qwen2.5-7B-Instruct");
    const live = await runCli(["ctl", "--server", server.url, "--token", server.token, "model", "plan", source]);
    expect(live.code).toBe(0);
    expect(live.stdout).toContain("No nodes have joined this server yet");
    const query = new URLSearchParams({ source, gpus: "1xL40S-48GB", context: "32768" });
    const response = await fetch(`${server.url}/api/v1/plan?${query}`, { headers: { authorization: `Bearer ${server.token}` } });
    const plan = (await response.json()) as Plan;
    expect(plan.requested_context).toBe(32768);
    expect(plan.candidates.some((candidate) => candidate.fits && candidate.pool.gpu_class === "l40s")).toBe(true);
  });

  it("takes --context back in the form the plan prints it (32k), in the CLI and on the server", async () => {
    const source = path.join(checkpoints, "Qwen2.5-7B-Instruct");
    const table = await runCli(["ctl", "model", "plan", source, "--gpus", "1xL40S-48GB"]);
    const printed = /\b(\d+k)\b/.exec(table.stdout)?.[1];
    expect(printed).toBeDefined();
    const asPrinted = await runCli(["ctl", "model", "plan", source, "--gpus", "1xL40S-48GB", "--context", printed as string, "--json"]);
    expect(asPrinted.stderr).toBe("");
    expect((JSON.parse(asPrinted.stdout) as Plan).requested_context).toBe(Number.parseInt(printed as string, 10) * 1024);

    const query = new URLSearchParams({ source, gpus: "1xL40S-48GB", context: "32k" });
    const response = await fetch(`${server.url}/api/v1/plan?${query}`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(((await response.json()) as Plan).requested_context).toBe(32768);
    const oneM = await runCli(["ctl", "model", "plan", source, "--gpus", "1xL40S-48GB", "--context", "1M", "--json"]);
    expect((JSON.parse(oneM.stdout) as Plan).requested_context).toBe(1048576);
  });

  it("refuses a --context that is not a token count, saying the forms it takes", async () => {
    const result = await runCli(["ctl", "model", "plan", path.join(checkpoints, "Qwen2.5-7B-Instruct"), "--gpus", "1xL40S-48GB", "--context", "32kb"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"32kb" is not a number of tokens such as 32768, 32k or 1M');
    const query = new URLSearchParams({ source: "x", context: "lots" });
    const response = await fetch(`${server.url}/api/v1/plan?${query}`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain("32k or 1M");
  });

  it("names the missing file when the source cannot be read", async () => {
    const result = await runCli(["ctl", "model", "plan", "/nonexistent/model", "--gpus", "1xH100-80GB"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("/nonexistent/model");
  });

  it("refuses a utilization that is not a fraction of a card", async () => {
    const result = await runCli(["ctl", "model", "plan", path.join(checkpoints, "Mistral-7B-v0.3"), "--gpus", "1xH100-80GB", "--utilization", "90"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"90" is not a fraction between 0 and 1 (write 0.90 for 90%)');
  });

  it("refuses a what-if spec it cannot read, naming the part", async () => {
    const result = await runCli(["ctl", "model", "plan", path.join(checkpoints, "Mistral-7B-v0.3"), "--gpus", "2 big cards"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"2 big cards" is not COUNTxCARD-MEMORY@FABRIC');
  });
});
