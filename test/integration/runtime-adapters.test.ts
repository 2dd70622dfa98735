import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ReplicaSupervisor } from "../../src/agent/replica-supervisor.js";
import { supervisorTestOptions } from "../support/supervisor-options.js";
import { driverFor } from "../../src/engines/drivers/index.js";
import { replicaSpecSchema, type ReplicaSpecInput } from "../../src/protocol/agent-protocol.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin } from "../support/processes.js";

let directory: string;
let supervisor: ReplicaSupervisor;
const apiKey = "replica-key-0123456789abcdef";

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-runtime-adapters-"));
  // The real drivers and the simulated engine (`llmgw sim-engine`), as an agent started with --simulate runs them.
  supervisor = new ReplicaSupervisor(
    supervisorTestOptions(directory, driverFor, {
      simulation: { llmgwCommand: [process.execPath, llmgwBin], fetch: false, cardClass: () => "h100" },
      startupTimeoutMs: 20_000,
      drainTimeoutMs: 2000,
    }),
  );
});

afterEach(async () => {
  await supervisor.close();
  for (const record of supervisor.persisted()) killGroup(record.process_group);
  await rm(directory, { recursive: true, force: true });
});

async function ready(overrides: Partial<ReplicaSpecInput>): Promise<string> {
  const spec = replicaSpecSchema.parse({ id: "r1", model: "chat", profile: "default", engine: "vllm", source: "hf://org/chat@main", cards: [0], api_key: apiKey, ...overrides });
  await supervisor.start(spec);
  const status = await waitFor(() => {
    const current = supervisor.get(spec.id);
    return current?.state === "ready" ? current : current?.state === "failed" ? false : undefined;
  }, 30_000, `${spec.id} ready`);
  return status.endpoint as string;
}

async function servedNames(endpoint: string): Promise<string[]> {
  const response = await request(`${endpoint}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } });
  return ((await response.body.json()) as { data: { id: string }[] }).data.map((model) => model.id);
}

describe("adapters changed in a running engine by its agent", () => {
  it("loads an adapter into a running vLLM (started with one) with the replica's key, and passes on the engine's refusal", async () => {
    const endpoint = await ready({ adapters: [{ name: "sql", source: "hf://org/sql-lora" }] });
    const pid = supervisor.get("r1")?.pid;
    await supervisor.changeAdapter("r1", { action: "load", adapter: { name: "legal", source: "hf://org/legal-lora" } }, undefined);
    expect(await servedNames(endpoint)).toEqual(["chat", "sql", "legal"]);
    expect(supervisor.get("r1")?.pid).toBe(pid);
    await expect(supervisor.changeAdapter("r1", { action: "load", adapter: { name: "legal", source: "hf://org/legal-lora" } }, apiKey)).rejects.toMatchObject({
      code: "adapter_load_failed",
      message: expect.stringContaining("The lora adapter 'legal' has already been loaded."),
    });
    await supervisor.changeAdapter("r1", { action: "unload", name: "legal" }, apiKey);
    expect(await servedNames(endpoint)).toEqual(["chat", "sql"]);
  });

  it("refuses llama.cpp, which takes adapters only at start, and a replica it does not have", async () => {
    await ready({ engine: "llamacpp", cards: [] });
    await expect(supervisor.changeAdapter("r1", { action: "load", adapter: { name: "sql", source: "/a/sql.gguf" } }, undefined)).rejects.toMatchObject({
      code: "adapter_load_failed",
      message: expect.stringContaining("loads adapters only at start"),
    });
    await expect(supervisor.changeAdapter("r9", { action: "unload", name: "sql" }, undefined)).rejects.toMatchObject({ code: "replica_not_found" });
  });

  it("passes on vLLM's refusal when it runs without LoRA (started with no adapter)", async () => {
    await ready({});
    await expect(supervisor.changeAdapter("r1", { action: "load", adapter: { name: "sql", source: "hf://org/sql-lora" } }, undefined)).rejects.toMatchObject({
      code: "adapter_load_failed",
      message: expect.stringContaining("refused to load adapter sql (404"),
    });
  });
});
