import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { makeCa, makeServerCertificate, type TestCa } from "../support/certificates.js";
import { killGroup, waitFor as waitUntil } from "../support/fake-engine.js";
import { freePort, llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const models = `models:
  - name: tiny-chat
    context: 4096
    # Kept out of the reconciler's hands: this test starts its replica by hand.
    scaling: { min: 0, max: 0 }
    profiles:
      - { engine: vllm, source: "hf://example/tiny-chat@main", gpus: 1 }
`;
const plainYaml = `nodes: { heartbeat_deadline: 15s, settling_window: 5s }\n${models}`;
const tlsYaml = `tls: { cert: server.crt, key: server.key }\n${plainYaml}`;

/** Checks here run `llmgw ctl` (a process each): polled every 250 ms. */
const waitFor = <T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string) => waitUntil(check, timeoutMs, what, 250);

describe("an agent keeps its node and replicas when its server is reached at another address or over https", () => {
  let directory: string;
  let port: number;
  let ca: TestCa;
  let server: ServerProcess;
  let agent: { child: ChildProcess; output: () => string; exited: Promise<number | null> } | undefined;
  const enginePids: number[] = [];

  /** ctl against the server at `url` (with the test CA for https://). */
  const ctl = async (url: string, ...args: string[]) => {
    const result = await runCli(["ctl", "--server", url, "--token", server.token, "--ca", ca.certFile, ...args]);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const replicas = async (url: string) => (JSON.parse(await ctl(url, "replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
  const nodes = async (url: string) => (JSON.parse(await ctl(url, "nodes", "--json")) as { nodes: NodeView[] }).nodes;

  const startServer = async (yaml: string) => {
    writeFileSync(path.join(directory, "server.yaml"), yaml);
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${port}`] });
  };

  const startAgentProcess = (serverUrl: string, joinToken?: string) => {
    const child = spawn(
      process.execPath,
      [llmgwBin, "agent", "--server", serverUrl, "--name", "node-a", "--data-dir", path.join(directory, "node-a"), "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g", "--ca", ca.certFile],
      {
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined, LLMGW_CA: undefined },
      },
    );
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    agent = { child, output: () => output, exited };
    return agent;
  };

  /** SIGTERM, as a service manager stops it: the agent exits and its engines run on. */
  const stopAgent = async () => {
    if (!agent) return;
    agent.child.kill("SIGTERM");
    expect(await agent.exited).toBe(0);
  };

  const savedServerUrl = () => (JSON.parse(readFileSync(path.join(directory, "node-a", "agent-state.json"), "utf8")) as { server_url: string }).server_url;

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-agent-address-e2e-");
    ca = makeCa(directory, "cluster-ca");
    makeServerCertificate(directory, ca, "server", "localhost");
    port = await freePort();
    await startServer(plainYaml);
  });

  afterAll(async () => {
    if (agent) killGroup(agent.child.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
  });

  let original: ReplicaView;

  it("joins at http://127.0.0.1 and runs a replica", async () => {
    const url = `http://127.0.0.1:${port}`;
    const joinToken = (JSON.parse(await ctl(url, "node", "token", "--json")) as { token: string }).token;
    startAgentProcess(url, joinToken);
    await waitFor(async () => (await nodes(url)).find((node) => node.name === "node-a" && node.state === "ready"), 30_000, "node-a ready");
    await ctl(url, "replica", "start", "tiny-chat", "--node", "node-a", "--id", "tiny-a");
    original = await waitFor(async () => (await replicas(url)).find((replica) => replica.id === "tiny-a" && replica.state === "ready"), 60_000, "tiny-a ready");
    enginePids.push(original.pid as number);
  });

  it("restarted at http://localhost without a join token: the same node, its replica adopted with the same engine", async () => {
    await stopAgent();
    const url = `http://localhost:${port}`;
    const restarted = startAgentProcess(url);
    const adopted = await waitFor(
      async () => (await replicas(url)).find((replica) => replica.id === "tiny-a" && replica.adopted && replica.state === "ready"),
      30_000,
      `tiny-a adopted by the agent at the new address:\n${restarted.output()}`,
    );
    expect(adopted.pid).toBe(original.pid);
    expect(await isProcessAlive(original.pid as number)).toBe(true);
    expect((await nodes(url)).map((node) => [node.name, node.state])).toEqual([["node-a", "ready"]]);
    expect(restarted.output()).not.toContain("has no join token");
    expect(savedServerUrl()).toBe(`${url}/`);
    // One start line in the engine's log: nothing was restarted.
    expect((await ctl(url, "logs", "tiny-a", "--tail", "10000")).match(/llmgw agent on node-a starts vllm/g)).toHaveLength(1);
  });

  it("restarted at https:// after the server moved to TLS, still without a token: the same node and engine", async () => {
    await stopAgent();
    await server.stop();
    await startServer(tlsYaml);
    const url = `https://localhost:${port}`;
    const restarted = startAgentProcess(url);
    // The restarted server reads the replica (adopted, ready) back from its database before the
    // agent has said anything: the saved address is what shows the agent checked this server and moved.
    await waitFor(
      async () => savedServerUrl() === `${url}/`,
      45_000,
      `the agent saves the https address once the server proved its identity:\n${restarted.output()}\n${server.output()}`,
    );
    const adopted = await waitFor(
      async () => (await replicas(url)).find((replica) => replica.id === "tiny-a" && replica.adopted && replica.state === "ready"),
      45_000,
      `tiny-a adopted by the agent over https:\n${restarted.output()}\n${server.output()}`,
    );
    expect(adopted.pid).toBe(original.pid);
    expect((await nodes(url)).map((node) => [node.name, node.state])).toEqual([["node-a", "ready"]]);
    expect(restarted.output()).toContain("server-address-changed");
    expect((await ctl(url, "logs", "tiny-a", "--tail", "10000")).match(/llmgw agent on node-a starts vllm/g)).toHaveLength(1);
  });
});
