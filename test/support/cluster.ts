import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { findMarkedProcesses } from "../../src/agent/find-marked-processes.js";
import type { EventView, ModelView, NodeView, ReplicaView } from "../../src/protocol/views.js";
import { ctlAgainst, ctlOutput, freePort, llmgwBin, startServerProcess, type ServerProcess } from "./processes.js";
import { temporaryDirectory } from "./temporary-directory.js";
import { killGroup, waitFor } from "./fake-engine.js";

/**
 * A cluster as real processes for end-to-end tests of the reconciler and of
 * the changes that roll replicas: a server with an open gateway on loopback,
 * and simulated agents started and killed at will.
 */

// Short pacing so each scenario takes seconds: the same keys an operator sets in server.yaml.
export const serverYaml = `gateway:
  auth: open
nodes:
  heartbeat_deadline: 4s
  settling_window: 2s
reconcile:
  interval: 500ms
  lease: 3s
  backoff_initial: 1s
  backoff_max: 4s
  scale_down_cooldown: 2s
  withdraw_delay: 1500ms
`;


export function modelYaml(name: string, extra: string, profile = "{ engine: vllm, source: \"hf://example/tiny@main\", gpu_class: h100, gpus: 1 }"): string {
  return `name: ${name}\ncontext: 4096\n${extra}profiles:\n  - ${profile}\n`;
}

/** A cluster as real processes: a server, and agents started and killed at will. */
export class Cluster {
  server!: ServerProcess;
  readonly agents = new Map<string, ChildProcess>();
  readonly enginePids = new Set<number>();
  joinToken = "";
  /** Given to every agent this cluster starts (e.g. `--fabric-address 127.0.0.1` for replicas over several nodes). */
  agentArgs: readonly string[] = [];

  constructor(
    readonly directory: string,
    readonly port: number,
  ) {}

  /**
   * Starts the server on the cluster's port and data directory and makes it the cluster's: the first start,
   * or a start again after a kill, which agents must find at the address they were given.
   */
  async startServer(): Promise<ServerProcess> {
    this.server = await startServerProcess({ cwd: this.directory, dataDir: path.join(this.directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${this.port}`] });
    return this.server;
  }

  ctlRaw(...args: string[]) {
    return ctlAgainst(this.server, args);
  }

  ctl(...args: string[]): Promise<string> {
    return ctlOutput(this.server, args);
  }

  async api<T>(method: "GET" | "POST", route: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.server.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.server.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async replicas(model?: string): Promise<ReplicaView[]> {
    const list = (await this.api<{ replicas: ReplicaView[] }>("GET", `/api/v1/replicas${model ? `?model=${model}` : ""}`)).replicas;
    for (const replica of list) if (replica.pid !== null) this.enginePids.add(replica.pid);
    return list;
  }

  model(name: string): Promise<ModelView> {
    return this.api<ModelView>("GET", `/api/v1/models/${name}`);
  }

  async events(model: string): Promise<EventView[]> {
    return (await this.api<{ events: EventView[] }>("GET", `/api/v1/events?model=${model}&limit=1000`)).events;
  }

  async addModel(name: string, yaml: string, ...extra: string[]): Promise<string> {
    const file = path.join(this.directory, `${name}.yaml`);
    writeFileSync(file, yaml);
    // The sources are made up: the simulated agents pretend to fetch them.
    return await this.ctl("model", "add", "-f", file, "--no-source-check", ...extra);
  }

  startAgent(name: string, simulate = "2xH100-80GB@nvl0,cpu:16c/64g"): void {
    const child = spawn(process.execPath, [llmgwBin, "agent", "--server", `http://127.0.0.1:${this.port}`, "--name", name, "--data-dir", path.join(this.directory, name), "--simulate", simulate, ...this.agentArgs], {
      detached: true,
      stdio: ["ignore", "ignore", "ignore"],
      env: { ...process.env, LLMGW_JOIN_TOKEN: this.joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
    });
    this.agents.set(name, child);
  }

  async killAgent(name: string): Promise<void> {
    const child = this.agents.get(name);
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  async readyReplicas(model: string, count: number, timeoutMs = 60_000): Promise<ReplicaView[]> {
    return await waitFor(async () => {
      const list = (await this.replicas(model)).filter((replica) => replica.state === "ready");
      return list.length === count ? list : undefined;
    }, timeoutMs, `${count} ready replica(s) of ${model}`);
  }

  async close(): Promise<void> {
    for (const child of this.agents.values()) killGroup(child.pid);
    for (const pid of this.enginePids) killGroup(pid);
    // Engines started since the last replica list (a canary's, a surge's) are found by the marker every engine
    // carries, naming its agent's folder: killing an agent leaves its engines running by design.
    for (const name of this.agents.keys()) {
      const folder = path.join(this.directory, name);
      const marked = existsSync(folder) ? await findMarkedProcesses(realpathSync(folder)) : undefined;
      for (const engine of marked ?? []) {
        killGroup(engine.pid);
        // A forked child of an engine is not a group leader: kill it by its own pid too.
        try {
          process.kill(engine.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    await this.server?.stop();
  }
}

/**
 * Starts a server and one agent per node, each with 2 H100s and a 16-core 64 GiB host unless `simulate` names its hardware.
 * `yaml` replaces the short pacing of serverYaml (the chaos suite gives an agent's restart more room than 4 s).
 */
export async function startCluster(prefix: string, nodes: readonly string[], simulate: Readonly<Record<string, string>> = {}, yaml = serverYaml, agentArgs: readonly string[] = []): Promise<Cluster> {
  const directory = temporaryDirectory(prefix);
  writeFileSync(path.join(directory, "server.yaml"), yaml);
  const cluster = new Cluster(directory, await freePort());
  cluster.agentArgs = agentArgs;
  await cluster.startServer();
  cluster.joinToken = (JSON.parse(await cluster.ctl("node", "token", "--json")) as { token: string }).token;
  for (const node of nodes) cluster.startAgent(node, simulate[node]);
  await waitFor(async () => {
    const list = (await cluster.api<{ nodes: NodeView[] }>("GET", "/api/v1/nodes")).nodes;
    return list.length === nodes.length && list.every((node) => node.state === "ready");
  }, 30_000, "the nodes to join");
  return cluster;
}

/**
 * Each replica as id, engine pid and node, sorted: equal lists before and after a fault mean no replica was
 * restarted, moved or placed anew (a new engine has a new pid, a new placement a new id).
 */
export function replicaIdentities(replicas: readonly ReplicaView[]): string[] {
  return replicas.map((replica) => `${replica.id} pid ${replica.pid} on ${replica.node}`).sort();
}

/** One chat completion through the server's gateway (open on this loopback test), which finds the model's replicas itself. */
export async function chat(endpoint: string, model = "tiny"): Promise<string> {
  const client = new OpenAI({ baseURL: `${endpoint}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
  const answer = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 4 });
  return answer.choices[0]?.message.content ?? "";
}

/** Chat completions one after another through the gateway until stopped: what a steady client sees while replicas roll. */
export function steadyStream(endpoint: string, model: string): { stop(): Promise<{ served: number; errors: string[] }> } {
  let streaming = true;
  let served = 0;
  const errors: string[] = [];
  const running = (async () => {
    while (streaming) {
      try {
        await chat(endpoint, model);
        served += 1;
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
  })();
  return {
    async stop() {
      streaming = false;
      await running;
      return { served, errors };
    },
  };
}
