import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { freePort, llmgwBin, runCli, startServerProcess, temporaryDirectory, type ServerProcess } from "../support/processes.js";
import { killGroup, waitFor } from "../support/fake-engine.js";

const serverYaml = `nodes:
  heartbeat_deadline: 15s
  settling_window: 20s
models:
  - name: tiny-chat
    context: 4096
    # Kept out of the reconciler's hands: this test starts its replicas by hand.
    scaling: { min: 0, max: 0 }
    profiles:
      - { engine: vllm, source: "hf://example/tiny-chat@main", gpus: 1 }
`;


function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A streamed chat completion with the official client, as any user would call the replica. */
async function streamedChat(endpoint: string): Promise<string> {
  const client = new OpenAI({ baseURL: `${endpoint}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
  const stream = await client.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Say hello." }], stream: true, max_tokens: 8 });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

describe("nodes end to end: a server and two simulated agents as real processes", () => {
  let directory: string;
  let port: number;
  let server: ServerProcess;
  let joinToken: string;
  const agents = new Map<string, ChildProcess>();
  const agentOutput = new Map<string, string>();
  const enginePids: number[] = [];

  const ctl = async (...args: string[]) => {
    const result = await runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const replicas = async () => (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
  const nodes = async () => (JSON.parse(await ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;

  const startServer = async () => {
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${port}`] });
  };

  const startAgentProcess = (name: string, withToken: boolean) => {
    const child = spawn(
      process.execPath,
      [llmgwBin, "agent", "--server", `http://127.0.0.1:${port}`, "--name", name, "--data-dir", path.join(directory, name), "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g"],
      {
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        // The join token by environment, as the docs advise (it stays out of `ps`).
        env: { ...process.env, ...(withToken ? { LLMGW_JOIN_TOKEN: joinToken } : {}), LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
      },
    );
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("exit", () => agentOutput.set(name, output));
    agents.set(name, child);
    return child;
  };

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-nodes-e2e-");
    writeFileSync(path.join(directory, "server.yaml"), serverYaml);
    port = await freePort();
    await startServer();
    joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
  });

  afterAll(async () => {
    for (const child of agents.values()) killGroup(child.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
  });

  it("joins both agents, starts a replica on each by API, and streams a chat completion from each", async () => {
    startAgentProcess("node-a", true);
    startAgentProcess("node-b", true);
    const joined = await waitFor(async () => {
      const list = await nodes();
      return list.length === 2 && list.every((node) => node.state === "ready") ? list : undefined;
    }, 30_000, "two ready nodes");
    expect(joined.map((node) => node.name)).toEqual(["node-a", "node-b"]);
    expect(joined[0]).toMatchObject({ cpu_cores: 16, gpus: [{ index: 0, class: "h100", fabric: "nvl0" }, { index: 1 }] });

    for (const node of ["node-a", "node-b"]) {
      const started = JSON.parse(await ctl("replica", "start", "tiny-chat", "--node", node, "--id", `tiny-${node}`, "--json")) as ReplicaView;
      expect(started).toMatchObject({ model: "tiny-chat", node, gpus: [0], engine: "vllm" });
    }
    const ready = await waitFor(async () => {
      const list = await replicas();
      return list.length === 2 && list.every((replica) => replica.state === "ready") ? list : undefined;
    }, 60_000, "two ready replicas");
    for (const replica of ready) {
      enginePids.push(replica.pid as number);
      expect(await streamedChat(replica.endpoint as string)).not.toBe("");
    }
    const text = await ctl("nodes");
    expect(text).toMatch(/node-a\s+ready \(simulated\)/);
    expect(text).toContain("tiny-chat (tiny-node-a, ready)");
    expect(await ctl("logs", "tiny-node-a", "--tail", "200")).toContain("sim-engine");
  });

  it("keeps every replica serving with the same pid through kill -9 of an agent and of the server", async () => {
    const before = new Map((await replicas()).map((replica) => [replica.id, replica]));
    expect(before.size).toBe(2);

    // kill -9 of an agent: its engine keeps serving; the restarted agent (no token) adopts it.
    const agentA = agents.get("node-a") as ChildProcess;
    agentA.kill("SIGKILL");
    await new Promise((resolve) => agentA.once("exit", resolve));
    const replicaA = before.get("tiny-node-a") as ReplicaView;
    expect(await streamedChat(replicaA.endpoint as string)).not.toBe("");
    startAgentProcess("node-a", false);
    await waitFor(async () => (await replicas()).find((replica) => replica.id === "tiny-node-a" && replica.adopted), 30_000, "tiny-node-a adopted");

    // kill -9 of the server: agents keep their engines; the new server adopts what runs from their reports.
    server.child.kill("SIGKILL");
    await new Promise((resolve) => server.child.once("exit", resolve));
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await startServer();
    const after = await waitFor(async () => {
      const list = await replicas();
      const nodeList = await nodes();
      return list.length === 2 && list.every((replica) => replica.state === "ready") && nodeList.every((node) => node.state === "ready") ? list : undefined;
    }, 30_000, "both replicas ready after the server restart");
    for (const replica of after) {
      const original = before.get(replica.id) as ReplicaView;
      expect(replica.pid).toBe(original.pid);
      expect(alive(replica.pid as number)).toBe(true);
      expect(await streamedChat(replica.endpoint as string)).not.toBe("");
    }
    // One start line per engine log: nothing was restarted.
    for (const id of ["tiny-node-a", "tiny-node-b"]) {
      const log = await ctl("logs", id, "--tail", "10000");
      expect(log.match(/llmgw agent on node-[ab] starts vllm/g)).toHaveLength(1);
    }
  });
});
