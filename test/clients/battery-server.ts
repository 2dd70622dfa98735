import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { ctlOutput, freePort, llmgwBin, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/** The engines the battery runs every client against. */
export type BatteryEngine = "sim" | "llama";

/** A server that needs gateway keys, with one node serving the engine's chat and embedding models, and a key for them. */
export interface BatteryServer {
  readonly engine: BatteryEngine;
  /** The gateway's base, without /v1. */
  readonly url: string;
  readonly key: string;
  readonly chatModel: string;
  readonly embeddingModel: string;
  stop(): Promise<void>;
}

const pacing = `nodes:
  heartbeat_deadline: 30s
  settling_window: 1s
reconcile:
  interval: 300ms
  lease: 3s
`;

/**
 * The simulated engine as vLLM on a simulated H100 node, fast (a hundred
 * times its modelled speed), serving chat and embeddings from one model as
 * vLLM does; or the built-in llama.cpp engine on this machine's CPU with the
 * tiny GGUF the test writes, one replica for chat (2,048 tokens of context,
 * the tiny model's own, room for tool definitions) and one with --embedding.
 */
function modelsYaml(engine: BatteryEngine, gguf: string): string {
  if (engine === "sim") {
    return `models:
  - name: sim-chat
    context: 8192
    profiles:
      - { engine: vllm, source: "hf://example/sim-chat@main", gpus: 1, env: { LLMGW_SIM_SPEED: "100" } }
`;
  }
  return `models:
  - name: tiny
    context: 2048
    profiles:
      - { engine: llamacpp, source: "${gguf}", memory_gb: 1, cpu_cores: 0.5, slots: 2 }
  - name: tiny-embed
    context: 512
    profiles:
      - { engine: llamacpp, source: "${gguf}", memory_gb: 1, cpu_cores: 0.5, args: ["--embedding"] }
`;
}

/** Starts the server, its one agent and the engine's models, and makes a gateway key; throws with the server's output when something never comes up. */
export async function startBatteryServer(engine: BatteryEngine): Promise<BatteryServer> {
  const directory = temporaryDirectory(`llmgw-client-battery-${engine}-`);
  const gguf = path.join(directory, "tiny.gguf");
  if (engine === "llama") await writeGgufFile(gguf, tinyModelGguf());
  writeFileSync(path.join(directory, "server.yaml"), `gateway:\n  auth: keys\n${pacing}${modelsYaml(engine, gguf)}`);
  const server: ServerProcess = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${await freePort()}`] });
  const ctl = (...args: string[]) => ctlOutput(server, args);
  const agents: ChildProcess[] = [];
  const enginePids = new Set<number>();
  const stop = async () => {
    for (const agent of agents) killGroup(agent.pid);
    for (const pid of enginePids) killGroup(pid);
    await server.stop();
  };
  try {
    const joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
    // The llama node simulates nothing and has no llama-server on its PATH: it runs llmgw's built-in engine.
    const simulate = engine === "sim" ? ["--simulate", "1xH100-80GB@nvl0,cpu:16c/64g"] : [];
    agents.push(
      spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", `${engine}-node`, "--data-dir", path.join(directory, "agent"), ...simulate], {
        detached: true,
        stdio: ["ignore", "ignore", "ignore"],
        env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined, CUDA_VISIBLE_DEVICES: "" },
      }),
    );
    const get = async <T>(route: string): Promise<T> => {
      const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${server.token}` } });
      if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    await waitFor(async () => (await get<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes.find((node) => node.state === "ready"), 60_000, "the node to join");
    const models = engine === "sim" ? ["sim-chat"] : ["tiny", "tiny-embed"];
    await waitFor(
      async () => {
        const replicas = (await get<{ replicas: ReplicaView[] }>("/api/v1/replicas")).replicas;
        for (const replica of replicas) if (replica.pid !== null) enginePids.add(replica.pid);
        return models.every((model) => replicas.some((replica) => replica.model === model && replica.state === "ready")) || undefined;
      },
      120_000,
      `ready replicas of ${models.join(", ")}`,
    );
    const created = await ctl("key", "create", "client-battery");
    const key = /^\s+(llmgw_key_\S+)$/m.exec(created)?.[1];
    if (key === undefined) throw new Error(`ctl key create printed no key:\n${created}`);
    return { engine, url: server.url, key, chatModel: models[0] as string, embeddingModel: (models[1] ?? models[0]) as string, stop };
  } catch (error) {
    await stop();
    throw new Error(`the ${engine} battery server did not come up: ${(error as Error).message}\n${server.output()}`);
  }
}
