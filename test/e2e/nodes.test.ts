import { spawn, type ChildProcess } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { killGroup, waitFor as waitUntil } from "../support/fake-engine.js";
import { freePort, llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

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

/** Whether the engine runs; a zombie (dead, and not reaped where nothing reaps orphans) does not. */
const alive = (pid: number): Promise<boolean> => isProcessAlive(pid);

/** A streamed chat completion with the official client, straight to the replica with the key only gateways hold. */
/** The simulated engine's answer to it: a first line naming the model and echoing the prompt, then its body. */
const answeredByTinyChat = /^Simulated answer from tiny-chat: Say hello\.\n\n/;

async function streamedChat(endpoint: string, apiKey: string): Promise<string> {
  const client = new OpenAI({ baseURL: `${endpoint}/v1`, apiKey, maxRetries: 0, timeout: 30_000 });
  const stream = await client.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Say hello." }], stream: true, max_tokens: 8 });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

/** Checks here run `llmgw ctl` (a process each): polled every 250 ms. */
const waitFor = <T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string) => waitUntil(check, timeoutMs, what, 250);

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
  /**
   * Each replica's engine key, from the routing table the gateways read (admin tokens only).
   * The table is rebuilt off the request path every half second, so a replica just reported
   * ready may join it a moment later.
   */
  const replicaKey = async (id: string) =>
    await waitFor(
      async () => {
        const answer = await fetch(`${server.url}/api/v1/routing`, { headers: { authorization: `Bearer ${server.token}` } });
        const table = (await answer.json()) as { models: { replicas: { id: string; api_key?: string }[] }[] };
        return table.models.flatMap((model) => model.replicas).find((replica) => replica.id === id)?.api_key;
      },
      10_000,
      `replica ${id} and its key in the routing table`,
    );

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
    // Each agent reports its release, the one `llmgw --version` prints.
    const version = (await runCli(["--version"])).stdout.trim();
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    expect(joined.map((node) => node.agent_version)).toEqual([version, version]);

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
      expect(await streamedChat(replica.endpoint as string, await replicaKey(replica.id))).toMatch(answeredByTinyChat);
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
    const keys = new Map([["tiny-node-a", await replicaKey("tiny-node-a")], ["tiny-node-b", await replicaKey("tiny-node-b")]]);
    expect(await streamedChat(replicaA.endpoint as string, keys.get("tiny-node-a") as string)).toMatch(answeredByTinyChat);
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
      expect(await alive(replica.pid as number)).toBe(true);
      // The engine kept its key through both restarts: the gateways' copy still opens it.
      expect(await streamedChat(replica.endpoint as string, keys.get(replica.id) as string)).toMatch(answeredByTinyChat);
    }
    // One start line per engine log: nothing was restarted.
    for (const id of ["tiny-node-a", "tiny-node-b"]) {
      const log = await ctl("logs", id, "--tail", "10000");
      expect(log.match(/llmgw agent on node-[ab] starts vllm/g)).toHaveLength(1);
    }
  });

  it("finds the engines of an agent whose state file was lost: the server shows it adopted, and hears it stopped only once its process is gone", async () => {
    const before = (await replicas()).find((replica) => replica.id === "tiny-node-b") as ReplicaView;
    const agentB = agents.get("node-b") as ChildProcess;
    agentB.kill("SIGKILL");
    await new Promise((resolve) => agentB.once("exit", resolve));
    rmSync(path.join(directory, "node-b", "agent-state.json"));
    // Without its credential it joins again; the server still hears its dead predecessor for its deadline,
    // and the agent, having found its engine, waits that out rather than give up.
    startAgentProcess("node-b", true);
    const adopted = await waitFor(
      async () => (await replicas()).find((replica) => replica.id === "tiny-node-b" && replica.adopted && replica.state === "ready"),
      60_000,
      `tiny-node-b adopted by the agent that lost its state file:\n${agentOutput.get("node-b") ?? ""}`,
    );
    expect(adopted.pid).toBe(before.pid);
    expect(await alive(before.pid as number)).toBe(true);
    // Its card is known to be held: nothing new is placed there.
    const busy = await runCli(["ctl", "--server", server.url, "--token", server.token, "replica", "start", "tiny-chat", "--node", "node-b", "--cards", "0"]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("card 0 on node node-b is used by replica tiny-node-b");

    await ctl("replica", "stop", "tiny-node-b");
    await waitFor(async () => !(await replicas()).some((replica) => replica.id === "tiny-node-b"), 30_000, "tiny-node-b gone from the replicas");
    expect(await alive(before.pid as number)).toBe(false);
  });
});
