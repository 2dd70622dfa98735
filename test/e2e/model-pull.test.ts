import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PullView } from "../../src/protocol/pull-views.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, withoutLlmgwVariables, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { closeServer, listenOnLoopback } from "../support/loopback-server.js";

const MiB = 1024 * 1024;
const weights = randomBytes(6 * MiB);
const weightsSha256 = createHash("sha256").update(weights).digest("hex");
const adapter = randomBytes(256 * 1024);

/**
 * A mirror as nginx serves one: files under /models/, Range answered with
 * 206, a `.sha256` beside the weights. It sends slowly (so a progress line
 * is seen) and cuts the weights' first download halfway, as a flaky proxy
 * would, so the agent must resume with a Range request.
 */
class Mirror {
  readonly files = new Map<string, Buffer>([
    ["/models/gguf/tiny-q4.gguf", weights],
    ["/models/gguf/tiny-q4.gguf.sha256", Buffer.from(`${weightsSha256}  tiny-q4.gguf\n`)],
    ["/models/adapters/sql.gguf", adapter],
  ]);
  readonly requests: { path: string; range: string | undefined }[] = [];
  private cutOnce = true;
  private readonly server = http.createServer((request, response) => this.answer(request, response));
  url = "";

  async start(): Promise<void> {
    this.url = await listenOnLoopback(this.server);
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }

  private answer(request: http.IncomingMessage, response: http.ServerResponse): void {
    const pathname = new URL(request.url ?? "/", "http://mirror").pathname;
    this.requests.push({ path: pathname, range: request.headers.range });
    const content = this.files.get(pathname);
    if (!content) {
      response.writeHead(404).end("not found");
      return;
    }
    // A bounded range (a reader after a file's header: the server's source check) is answered whole, as nginx does, and never cut.
    const bounded = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? "");
    if (bounded) {
      const [from, to] = [Number(bounded[1]), Math.min(Number(bounded[2]), content.length - 1)];
      response.writeHead(206, { "accept-ranges": "bytes", "content-length": to - from + 1, "content-range": `bytes ${from}-${to}/${content.length}`, etag: `"${content.length}"` });
      response.end(request.method === "HEAD" ? undefined : content.subarray(from, to + 1));
      return;
    }
    const start = Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? "")?.[1] ?? 0);
    const headers: Record<string, string | number> = { "accept-ranges": "bytes", "content-length": content.length - start, etag: `"${content.length}"` };
    if (start > 0) headers["content-range"] = `bytes ${start}-${content.length - 1}/${content.length}`;
    response.writeHead(start > 0 ? 206 : 200, headers);
    if (request.method === "HEAD") {
      response.end();
      return;
    }
    const cutAt = pathname.endsWith(".gguf") && content === weights && this.cutOnce ? content.length / 2 : undefined;
    if (cutAt !== undefined) this.cutOnce = false;
    let position = start;
    const chunk = 256 * 1024;
    const send = (): void => {
      if (response.destroyed) return;
      if (cutAt !== undefined && position >= cutAt) {
        response.destroy();
        return;
      }
      if (position >= content.length) {
        response.end();
        return;
      }
      const end = Math.min(position + chunk, content.length, cutAt ?? content.length);
      response.write(content.subarray(position, end));
      position = end;
      setTimeout(send, 60);
    };
    send();
  }
}

const serverYaml = (mirrorUrl: string) => `mirror: ${mirrorUrl}/models/
models:
  - name: tiny
    context: 4096
    # Kept out of the reconciler's hands: the pull alone must put the weights on the node.
    scaling: { min: 0, max: 0 }
    adapters:
      - { name: tiny-sql, source: "mirror:adapters/sql.gguf" }
    profiles:
      - { name: h100, engine: vllm, source: "mirror:safetensors/tiny/", gpu_class: h100, gpus: 1 }
      - { name: cpu, engine: llamacpp, source: "mirror:gguf/tiny-q4.gguf", memory_gb: 2, cpu_cores: 2 }
  - name: gone
    context: 4096
    scaling: { min: 0, max: 0 }
    profiles:
      - { name: cpu, engine: llamacpp, source: "mirror:gguf/missing.gguf", memory_gb: 2, cpu_cores: 2 }
  - name: big-gpu
    context: 4096
    scaling: { min: 0, max: 0 }
    profiles:
      - { name: h100, engine: vllm, source: "mirror:safetensors/big/", gpu_class: h100, gpus: 8 }
`;

describe("ctl model pull end to end: a server, a real-fetching agent and a local mirror", () => {
  let directory: string;
  let mirror: Mirror;
  let server: ServerProcess;
  let agent: ChildProcess | undefined;
  let agentOutput = "";
  /** Engines run in their own process group and outlive the agent: killed here if a test stops halfway. */
  const enginePids: number[] = [];

  const ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-pull-e2e-");
    mirror = new Mirror();
    await mirror.start();
    writeFileSync(path.join(directory, "server.yaml"), serverYaml(mirror.url));
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml"] });
    const token = await ctl("node", "token", "--json");
    expect(token.code, token.stderr).toBe(0);
    const joinToken = (JSON.parse(token.stdout) as { token: string }).token;
    // A CPU-only node that fetches for real: the GPU profile cannot run there, the CPU profile can.
    agent = spawn(
      process.execPath,
      [llmgwBin, "agent", "--server", server.url, "--name", "cpu-node", "--data-dir", path.join(directory, "agent"), "--simulate", "cpu:8c/16g", "--simulate-fetch"],
      { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...withoutLlmgwVariables(process.env), LLMGW_JOIN_TOKEN: joinToken } },
    );
    agent.stdout?.on("data", (chunk: Buffer) => (agentOutput += chunk.toString()));
    agent.stderr?.on("data", (chunk: Buffer) => (agentOutput += chunk.toString()));
    await waitFor(
      async () => {
        const nodes = await ctl("nodes", "--json");
        return nodes.code === 0 && (JSON.parse(nodes.stdout) as { nodes: NodeView[] }).nodes.some((node) => node.state === "ready");
      },
      30_000,
      "the agent to join",
      250,
    );
  }, 60_000);

  afterAll(async () => {
    killGroup(agent?.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
    await mirror?.stop();
  });

  it("fetches the model's weights and adapter onto the node of its pool, resuming a cut download, and shows progress and what the node holds", async () => {
    const pull = await ctl("model", "pull", "tiny", "--wait");
    expect(pull.code, `${pull.stderr}\n${agentOutput}`).toBe(0);
    // A progress line while it ran, then what the node holds.
    expect(pull.stdout).toMatch(/^cpu-node \(cpu\) {2}fetching {2}[\d.]+ [KM]iB (of [\d.]+ MiB \(\d+%\)|so far)$/m);
    expect(pull.stdout).toMatch(/^cpu-node \(cpu\) {2}cached 6\.3 MiB$/m);
    expect(pull.stdout).toContain(`mirror:gguf/tiny-q4.gguf from ${mirror.url}/models/gguf/tiny-q4.gguf  6.0 MiB`);
    expect(pull.stdout).toContain("mirror:adapters/sql.gguf");

    // The first download was cut halfway; the agent asked for the rest only, and checked the published sum.
    // (The server's source check at `ctl model add` read the header with a bounded range: not a download.)
    const downloads = mirror.requests.filter((request) => request.path === "/models/gguf/tiny-q4.gguf" && !/^bytes=\d+-\d+$/.test(request.range ?? ""));
    expect(downloads[0]?.range).toBeUndefined();
    expect(downloads.at(-1)?.range).toMatch(/^bytes=\d+-$/);
    expect(Number(/^bytes=(\d+)-$/.exec(downloads.at(-1)?.range ?? "")?.[1])).toBeGreaterThan(0);
    expect(mirror.requests.some((request) => request.path === "/models/gguf/tiny-q4.gguf.sha256")).toBe(true);
    const cached = readFileSync(path.join(directory, "agent", "weights", "http", new URL(mirror.url).host.replace(":", "_"), "models", "gguf", "tiny-q4.gguf"));
    expect(createHash("sha256").update(cached).digest("hex")).toBe(weightsSha256);
  });

  it("answers a second pull at once, saying the weights were already cached", async () => {
    const before = mirror.requests.length;
    const again = await ctl("model", "pull", "tiny", "--wait");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^cpu-node \(cpu\) {2}cached 6\.3 MiB \(already cached: nothing fetched\)$/m);
    expect(mirror.requests.length).toBe(before);
    const status = JSON.parse((await ctl("model", "pull", "tiny", "--status", "--json")).stdout) as PullView;
    expect(status.nodes).toEqual([expect.objectContaining({ node: "cpu-node", profile: "cpu", state: "cached" })]);
  });

  it("makes the model's first load on the node no download: its replica starts from the pulled weights", async () => {
    const before = mirror.requests.length;
    const started = await ctl("replica", "start", "tiny", "--node", "cpu-node", "--profile", "cpu", "--id", "tiny-1", "--json");
    expect(started.code, started.stderr).toBe(0);
    const ready = await waitFor(
      async () => {
        const shown = await ctl("replicas", "--json");
        const replica = (JSON.parse(shown.stdout) as { replicas: ReplicaView[] }).replicas.find((each) => each.id === "tiny-1");
        if (replica?.pid !== null && replica?.pid !== undefined && !enginePids.includes(replica.pid)) enginePids.push(replica.pid);
        if (replica?.state === "failed") throw new Error(`the replica failed: ${replica.reason ?? ""}`);
        return replica?.state === "ready" ? replica : undefined;
      },
      30_000,
      "the replica to be ready",
      250,
    );
    expect(ready.node).toBe("cpu-node");
    expect(mirror.requests.slice(before)).toEqual([]);
    const stopped = await ctl("replica", "stop", "tiny-1");
    expect(stopped.code, stopped.stderr).toBe(0);
  });

  it("ends with the exact error per node when the mirror lacks the file, and exits non-zero", async () => {
    const failed = await ctl("model", "pull", "gone", "--wait");
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(`could not fetch ${mirror.url}/models/gguf/missing.gguf on node cpu-node: the server answered 404 (not found)`);
    expect(failed.stderr).toContain("the pull of gone failed on cpu-node");
  });

  it("refuses a model no node can run, and a node the model cannot run on, saying why", async () => {
    const nowhere = await ctl("model", "pull", "big-gpu");
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain("no node can run any profile of big-gpu, so its weights are pulled nowhere: cpu-node (h100: has no h100 cards)");
    const unknown = await ctl("model", "pull", "tiny", "--node", "no-such-node");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no-such-node/);
  });
});
