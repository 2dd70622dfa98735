import http from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { modelEntrySchema } from "../catalog/schema.js";
import type { FetchStatus, Inventory } from "../protocol/agent-protocol.js";
import { demandProfile } from "../placement/index.js";
import { openStore, type Store } from "../store/open-store.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { CatalogService } from "./catalog-service.js";
import { FleetService } from "./fleet-service.js";
import { PullService } from "./pull-service.js";
import { closeServer, listenOnLoopback } from "../../test/support/loopback-server.js";

const GiB = 1024 ** 3;
const cpuInventory: Inventory = { hostname: "cpu-host", gpus: [], memory_bytes: 64 * GiB, cpu_cores: 16, engines: ["llamacpp"], disk_free_bytes: 10 ** 12, simulated: false };
const cardInventory: Inventory = {
  ...cpuInventory,
  hostname: "gpu-host",
  gpus: [{ index: 0, uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * GiB, fabric: "nvl0" }],
  engines: ["vllm", "llamacpp"],
};

/** An agent's control API as far as pulls go: it answers what it was asked to fetch, and lists it. */
class FakeAgent {
  readonly asked: string[] = [];
  readonly fetches = new Map<string, FetchStatus>();
  private readonly server = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      if (request.method === "POST" && request.url === "/agent/v1/fetches") {
        const source = (JSON.parse(body) as { source: string }).source;
        this.asked.push(source);
        const fetch: FetchStatus = { source, state: "fetching", bytes_done: 0, since: new Date().toISOString() };
        this.fetches.set(source, fetch);
        response.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ protocol: 1, fetch }));
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ protocol: 1, fetches: [...this.fetches.values()] }));
    });
  });
  url = "";

  async start(): Promise<void> {
    this.url = await listenOnLoopback(this.server);
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }
}

describe.each(storesUnderTest)("pulls over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let clock: number;
  let agent: FakeAgent;
  let catalog: CatalogService;
  let fleet: FleetService;
  const admin = { token: "admin", user: null };

  const pulls = ({ mirror }: { mirror: string | undefined } = { mirror: "https://mirror.internal/models/" }) =>
    new PullService(catalog, fleet, { mirror, gpuMemoryUtilization: 0.9, demandProfiles: (model) => model.profiles.map((profile) => demandProfile(profile, undefined)) });

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    clock = Date.parse("2026-01-01T00:00:00Z");
    agent = new FakeAgent();
    await agent.start();
    catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(
      modelEntrySchema.parse({
        name: "qwen",
        adapters: [{ name: "qwen-sql", source: "mirror:adapters/sql/" }],
        profiles: [
          { name: "h100", engine: "vllm", source: "mirror:qwen/", gpus: 1, gpu_class: "h100" },
          { name: "cpu", engine: "llamacpp", source: "mirror:gguf/qwen-q4.gguf", memory_gb: 8, cpu_cores: 4 },
        ],
      }),
      admin,
    );
    await catalog.add(modelEntrySchema.parse({ name: "remote", external: { base_url: "https://api.example/v1", api_key_env: "KEY" } }), admin);
    fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env }, () => clock);
    const { token } = await fleet.createJoinToken("admin");
    await fleet.join({ protocol: 1, join_token: token, name: "cpu-1", address: agent.url, fabric: "cpu-1", labels: {}, inventory: cpuInventory });
    // Its agent is not listening: the pull reaches it not.
    await fleet.join({ protocol: 1, join_token: token, name: "gpu-1", address: "http://127.0.0.1:9", fabric: "nvl0", labels: {}, inventory: cardInventory });
  });
  afterEach(async () => {
    await agent.stop();
    await store.close();
    await drop();
  });

  it("asks each node for the first profile it can run, with mirror: sources resolved, and says which agent it could not reach", async () => {
    const view = await pulls().start("qwen", undefined);
    expect(agent.asked).toEqual(["https://mirror.internal/models/gguf/qwen-q4.gguf", "https://mirror.internal/models/adapters/sql/"]);
    expect(view.model).toBe("qwen");
    expect(view.skipped).toEqual([]);
    const [cpuNode, gpuNode] = view.nodes;
    expect(cpuNode).toMatchObject({ node: "cpu-1", profile: "cpu", state: "fetching", reason: null });
    expect(cpuNode?.sources.map((source) => [source.source, source.fetched_from, source.state])).toEqual([
      ["mirror:gguf/qwen-q4.gguf", "https://mirror.internal/models/gguf/qwen-q4.gguf", "fetching"],
      ["mirror:adapters/sql/", "https://mirror.internal/models/adapters/sql/", "fetching"],
    ]);
    expect(gpuNode).toMatchObject({ node: "gpu-1", profile: "h100", state: "failed", sources: [], reason: expect.stringContaining("could not reach the agent of node gpu-1") });
  });

  it("reads progress from the agent, and calls a source it holds no record of unknown, saying how to resume", async () => {
    await pulls().start("qwen", "cpu-1");
    agent.fetches.set("https://mirror.internal/models/gguf/qwen-q4.gguf", {
      source: "https://mirror.internal/models/gguf/qwen-q4.gguf",
      state: "cached",
      bytes_done: 5 * GiB,
      bytes_total: 5 * GiB,
      size_bytes: 5 * GiB,
      already_cached: false,
      since: new Date().toISOString(),
    });
    agent.fetches.delete("https://mirror.internal/models/adapters/sql/");
    const view = await pulls().progress("qwen", "cpu-1");
    expect(view.nodes).toHaveLength(1);
    expect(view.nodes[0]?.state).toBe("failed");
    expect(view.nodes[0]?.sources).toEqual([
      expect.objectContaining({ state: "cached", size_bytes: 5 * GiB }),
      expect.objectContaining({ state: "unknown", reason: expect.stringContaining("run `llmgw ctl model pull qwen` (it resumes what was fetched)") }),
    ]);
  });

  it("leaves a lost node out of the pool, saying why", async () => {
    clock += 60_000;
    await fleet.heartbeat(undefined, {}).catch(() => undefined);
    await expect(pulls().start("qwen", undefined)).rejects.toMatchObject({ code: "does_not_fit", message: expect.stringContaining("cpu-1 (h100: is lost; cpu: is lost)") });
  });

  it("refuses a node the model cannot run on, an unknown node, an external model and a mirror: source with no mirror, before asking any agent", async () => {
    await catalog.add(modelEntrySchema.parse({ name: "gpu-only", profiles: [{ engine: "vllm", source: "hf://org/m@main", gpus: 1, gpu_class: "h100" }] }), admin);
    const refused = pulls().start("gpu-only", "cpu-1");
    await expect(refused).rejects.toMatchObject({ code: "does_not_fit" });
    await expect(refused).rejects.toThrow(/^gpu-only cannot run on node cpu-1, so its weights are not pulled there: [\w-]+: has no vllm installed$/);
    await expect(pulls().start("qwen", "nowhere")).rejects.toMatchObject({ code: "node_not_found" });
    await expect(pulls().start("remote", undefined)).rejects.toMatchObject({ code: "invalid_profile" });
    await expect(pulls({ mirror: undefined }).start("qwen", undefined)).rejects.toThrow(/no mirror is configured/);
    expect(agent.asked).toEqual([]);
  });
});
