import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointTensors, ggufHeaderBytes, syntheticGguf, writeBytes, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../src/plan/testing/fixtures.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import type { EventView, NodeView, ReplicaView } from "../../src/protocol/views.js";
import type { HistoryView, UpdateCheckView } from "../../src/protocol/version-views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { ctlAgainst, ctlOutput, freePort, llmgwBin, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const first = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const second = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/** A server and two simulated agents as real processes, reading models and adapters from a local hub stand-in. */
class Cluster {
  server!: ServerProcess;
  readonly agents: ChildProcess[] = [];
  readonly enginePids = new Set<number>();

  constructor(
    readonly directory: string,
    readonly hub: HubServer,
  ) {}

  ctlRaw(...args: string[]) {
    return ctlAgainst(this.server, args);
  }

  ctl(...args: string[]): Promise<string> {
    return ctlOutput(this.server, args);
  }

  async get<T>(route: string): Promise<T> {
    const response = await fetch(`${this.server.url}${route}`, { headers: { authorization: `Bearer ${this.server.token}` } });
    if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async readyReplicas(model: string, count: number, timeoutMs = 60_000): Promise<ReplicaView[]> {
    return await waitFor(async () => {
      const list = (await this.get<{ replicas: ReplicaView[] }>(`/api/v1/replicas?model=${model}`)).replicas;
      for (const replica of list) if (replica.pid !== null) this.enginePids.add(replica.pid);
      const ready = list.filter((replica) => replica.state === "ready");
      return ready.length === count && list.every((replica) => replica.state === "ready" || replica.state === "stopped") ? ready : undefined;
    }, timeoutMs, `${count} ready replica(s) of ${model}`);
  }

  async addModel(name: string, yaml: string): Promise<void> {
    const file = path.join(this.directory, `${name}.yaml`);
    writeFileSync(file, yaml);
    await this.ctl("model", "add", "-f", file, "--wait");
  }

  async close(): Promise<void> {
    for (const child of this.agents) killGroup(child.pid);
    for (const pid of this.enginePids) killGroup(pid);
    await this.server?.stop();
  }
}

/** Requests through the gateway, one after another on each of `workers`, until stopped: every failure is counted. */
function steadyStream(url: string, model: string, workers = 2): { stop(): Promise<{ ok: number; failed: string[] }> } {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
  let running = true;
  let ok = 0;
  const failed: string[] = [];
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      try {
        await client.chat.completions.create({ model, messages: [{ role: "user", content: "steady" }], max_tokens: 4 });
        ok += 1;
      } catch (error) {
        failed.push((error as Error).message);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { ok, failed };
    },
  };
}

async function answerFrom(url: string, model: string): Promise<string> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
  const answer = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], max_tokens: 8 });
  return answer.choices[0]?.message.content ?? "";
}

describe("adapters and versions of served models, with a server, two simulated agents and a hub stand-in", () => {
  let cluster: Cluster;
  let mirror: string;

  beforeAll(async () => {
    const directory = temporaryDirectory("llmgw-adapters-versions-e2e-");
    const files = path.join(directory, "hub");
    await writeSyntheticCheckpoint(path.join(files, "qwen"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    await writeBytes(path.join(files, "gguf", "llama-3.1-8b-Q4_K_M.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
    const lora = (architecture: string) =>
      ggufHeaderBytes({ "general.architecture": architecture, "general.type": "adapter", "adapter.type": "lora" }, [{ name: "blk.0.attn_q.weight.lora_a", dimensions: [4096, 16], type: "F16" }]);
    await writeBytes(path.join(files, "gguf", "llama-sql-lora.gguf"), lora("llama"));
    await writeBytes(path.join(files, "gguf", "qwen2-sql-lora.gguf"), lora("qwen2"));
    for (const [name, rank] of [["qwen-sql", 8], ["qwen-legal", 16], ["qwen-wide", 128]] as const) {
      await mkdir(path.join(files, "peft", name), { recursive: true });
      await writeFile(path.join(files, "peft", name, "adapter_config.json"), JSON.stringify({ peft_type: "LORA", r: rank, base_model_name_or_path: "example/qwen" }));
    }
    const qwen = path.join(files, "qwen");
    const hub = await startHubServer({ repositories: { "example/qwen": { commits: { [first]: qwen, [second]: qwen }, branches: { main: second } } }, mirrorRoot: files });
    mirror = `${hub.url}/mirror`;
    writeFileSync(
      path.join(directory, "server.yaml"),
      `gateway:\n  auth: open\nhuggingface:\n  endpoint: ${hub.url}\nnodes:\n  heartbeat_deadline: 4s\n  settling_window: 2s\nreconcile:\n  interval: 500ms\n  lease: 3s\n  withdraw_delay: 1500ms\n`,
    );
    cluster = new Cluster(directory, hub);
    const port = await freePort();
    cluster.server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${port}`] });
    const joinToken = (JSON.parse(await cluster.ctl("node", "token", "--json")) as { token: string }).token;
    for (const node of ["node-a", "node-b"]) {
      const child = spawn(process.execPath, [llmgwBin, "agent", "--server", cluster.server.url, "--name", node, "--data-dir", path.join(directory, node), "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g"], {
        detached: true,
        stdio: ["ignore", "ignore", "ignore"],
        env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
      });
      cluster.agents.push(child);
    }
    await waitFor(async () => {
      const nodes = (await cluster.get<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes;
      return nodes.length === 2 && nodes.every((node) => node.state === "ready");
    }, 30_000, "the nodes to join");
    // vLLM with one adapter from the start, so LoRA is on and further adapters load at runtime; llama.cpp on CPU.
    await cluster.addModel(
      "chat",
      `name: chat\norigin: hf://example/qwen@${first}\ncontext: 4096\nadapters:\n  - { name: qwen-sql, source: "${mirror}/peft/qwen-sql/" }\nprofiles:\n  - { engine: vllm, source: "hf://example/qwen@${first}", gpu_class: h100, gpus: 1 }\n`,
    );
    await cluster.addModel("cpu", `name: cpu\ncontext: 2048\nprofiles:\n  - { engine: llamacpp, source: "${mirror}/gguf/llama-3.1-8b-Q4_K_M.gguf", memory_gb: 8, cpu_cores: 4 }\n`);
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    await cluster?.hub.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("refuses adapters its engine could not attach, reading each adapter's own files first", async () => {
    const refusals = [
      [["cpu", "--add", `other=${mirror}/gguf/qwen2-sql-lora.gguf`], "is a LoRA for qwen2, but cpu is a llama model"],
      [["cpu", "--add", `base=${mirror}/gguf/llama-3.1-8b-Q4_K_M.gguf`], "not a LoRA adapter"],
      [["chat", "--add", `scaled=${mirror}/peft/qwen-legal/@0.5`], "a scale (@0.5) applies to llama.cpp only"],
      [["chat", "--add", `wide=${mirror}/peft/qwen-wide/`], "has rank 128, above the 64 that chat's vllm engine is started for"],
      [["chat", "--remove", "nothing"], "model chat has no adapter nothing"],
    ] as const;
    for (const [args, message] of refusals) {
      const result = await cluster.ctlRaw("model", "adapters", ...args);
      expect(result.code, args.join(" ")).toBe(1);
      expect(result.stderr).toContain(message);
    }
    expect(await cluster.ctl("model", "adapters", "chat")).toMatch(/qwen-sql\s+http:\/\/127\.0\.0\.1:\d+\/mirror\/peft\/qwen-sql\/\s+-/);
  });

  it("loads an adapter into a running vLLM replica and serves it by name through /v1, without a restart", async () => {
    const [before] = await cluster.readyReplicas("chat", 1);
    const output = await cluster.ctl("model", "adapters", "chat", "--add", `qwen-legal=${mirror}/peft/qwen-legal/`);
    expect(output).toContain("Added adapter qwen-legal to chat: loaded into 1 running replica(s) without a restart.");
    const answer = await waitFor(() => answerFrom(cluster.server.url, "qwen-legal").catch(() => undefined), 10_000, "qwen-legal through the gateway");
    expect(answer).toContain("Simulated answer from qwen-legal");
    const after = await cluster.readyReplicas("chat", 1);
    expect(after.map((replica) => replica.id)).toEqual([before?.id]);
    const removed = await cluster.ctl("model", "adapters", "chat", "--remove", "qwen-legal");
    expect(removed).toContain("Removed adapter qwen-legal from chat: unloaded from 1 running replica(s) without a restart.");
    await waitFor(() => answerFrom(cluster.server.url, "qwen-legal").then(() => undefined, (error: unknown) => error instanceof OpenAI.NotFoundError), 10_000, "qwen-legal gone");
    expect((await cluster.readyReplicas("chat", 1)).map((replica) => replica.id)).toEqual([before?.id]);
  });

  it("attaches a llama.cpp adapter by a surge restart, and serves it at its scale", async () => {
    const [before] = await cluster.readyReplicas("cpu", 1);
    const stream = steadyStream(cluster.server.url, "cpu");
    const output = await cluster.ctl("model", "adapters", "cpu", "--add", `sql=${mirror}/gguf/llama-sql-lora.gguf@0.8`, "--wait");
    const { ok, failed } = await stream.stop();
    expect(output).toContain("its engine takes adapters only at start: a restart is needed, and 1 replica(s) are replaced by surge");
    expect(failed).toEqual([]);
    expect(ok).toBeGreaterThan(0);
    const [after] = await cluster.readyReplicas("cpu", 1);
    expect(after?.id).not.toBe(before?.id);
    // llama-server names no adapters: the simulation answers with the file's name, picked by the position the gateway sent.
    expect(await answerFrom(cluster.server.url, "sql")).toContain("Simulated answer from llama-sql-lora");
    expect(JSON.parse(await cluster.ctl("model", "adapters", "cpu", "--json"))).toEqual({ model: "cpu", adapters: [{ name: "sql", source: `${mirror}/gguf/llama-sql-lora.gguf`, scale: 0.8 }] });
  });

  it("updates to the hub's newer commit and rolls back, by surge, with no failed request, and lists the history", async () => {
    const updates = JSON.parse(await cluster.ctl("model", "updates", "--json")) as { models: UpdateCheckView[] };
    expect(updates.models).toEqual([{ model: "chat", repository: "example/qwen", revision: first, branch: "main", latest: second, update_available: true, error: null }]);
    expect(await cluster.ctl("model", "updates")).toMatch(/chat\s+example\/qwen\s+1111111a+\s+main\s+2222222b+\s+yes/);
    const missing = await cluster.ctlRaw("model", "update", "chat", "--to", "no-such-branch");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("example/qwen has no revision no-such-branch");

    const [original] = await cluster.readyReplicas("chat", 1);
    const stream = steadyStream(cluster.server.url, "chat");
    const updated = await cluster.ctl("model", "update", "chat", "--wait");
    const [afterUpdate] = await cluster.readyReplicas("chat", 1);
    const rolledBack = await cluster.ctl("model", "rollback", "chat", "--wait");
    const [afterRollback] = await cluster.readyReplicas("chat", 1);
    const { ok, failed } = await stream.stop();

    expect(updated).toContain(`Updating chat: ${first} -> ${second}; 1 replica to replace (each new one ready before the old one stops).`);
    expect(rolledBack).toContain(`Rolling back chat: ${second} -> ${first}; 1 replica to replace`);
    expect(failed).toEqual([]);
    expect(ok).toBeGreaterThan(0);
    expect(new Set([original?.id, afterUpdate?.id, afterRollback?.id]).size).toBe(3);
    expect(await cluster.ctl("model", "origin", "chat")).toContain(`chat: origin hf://example/qwen@${first}; it follows example/qwen at ${first}.`);

    const history = JSON.parse(await cluster.ctl("model", "history", "chat", "--json")) as HistoryView;
    expect(history.changes.map((change) => [change.kind, change.from, change.to, change.actor])).toEqual([
      ["update", first, second, "admin"],
      ["rollback", second, first, "admin"],
    ]);
    expect(await cluster.ctl("model", "history", "chat")).toMatch(/rollback\s+2222222b+\s+1111111a+\s+admin/);
    const events = (await cluster.get<{ events: EventView[] }>("/api/v1/events?model=chat&limit=1000")).events.map((event) => event.kind);
    expect(events).toEqual(expect.arrayContaining(["model-adapter-added", "model-adapter-removed", "model-updating", "model-rolling-back", "model-restarting"]));
    const audit = await cluster.get<{ events: { action: string; before: { origin?: string }; after: { origin?: string } }[] }>("/api/v1/audit?model=chat");
    expect(audit.events.find((event) => event.action === "model-updated")).toMatchObject({ before: { origin: `hf://example/qwen@${first}` }, after: { origin: `hf://example/qwen@${second}` } });
  });
});
