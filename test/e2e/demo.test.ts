import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureArchitecture, fixtureConfig, fixturesFolder } from "../../src/plan/testing/fixtures.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import type { Plan } from "../../src/plan/index.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { cardClassInfo } from "../../src/fleet/card-classes.js";
import { waitFor } from "../support/fake-engine.js";
import { llmgwBin, runCli } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { pasteInShell, pathWithLlmgw } from "../support/paste-in-shell.js";

/** Engines still running (a zombie is not running: it only waits for a parent to reap it). */
async function running(pids: readonly number[]): Promise<number[]> {
  const alive: number[] = [];
  for (const pid of pids) if (await isProcessAlive(pid)) alive.push(pid);
  return alive;
}

describe("llmgw demo, as a newcomer runs it", () => {
  let started: DemoProcess;
  let demo: ChildProcess;
  let output = "";
  let url: string;
  let token: string;
  let exited: Promise<number | null>;
  const ctl = async (...args: string[]) => {
    const result = await runCli(["ctl", "--server", url, "--token", token, ...args]);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };

  beforeAll(async () => {
    started = await startDemoProcess();
    ({ process: demo, url, token, exited } = started);
    output = started.output();
  }, 150_000);

  afterAll(() => stopDemo(started), 40_000);

  it("runs two simulated nodes and three replicas of its presets that each answered", async () => {
    const nodes = (JSON.parse(await ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;
    expect(nodes.map((node) => [node.name, node.state, node.simulated, node.gpus.length])).toEqual([
      ["gpu-node-1", "ready", true, 2],
      ["gpu-node-2", "ready", true, 4],
    ]);
    // One H100 has memory held by a process llmgw did not start, as the agent reports it.
    const foreign = nodes.flatMap((node) => node.gpus.filter((gpu) => (gpu.memory_foreign_bytes ?? 0) > 0).map((gpu) => [node.name, gpu.index, gpu.class, gpu.memory_foreign_bytes]));
    expect(foreign).toEqual([["gpu-node-1", 1, "h100", 20 * 1024 ** 3]]);
    expect(output).toContain("node       gpu-node-1: 2× H100 80 GB (20 GiB of card 1 held by another process), 32 cores, 256 GiB (simulated)");
    const replicas = (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
    expect(replicas.map((replica) => [replica.model, replica.state]).sort()).toEqual([
      ["llama-3.1-8b", "ready"],
      ["qwen2.5-7b-instruct", "ready"],
      ["qwen3-embedding-0.6b", "ready"],
    ]);
    // All on gpu-node-1: its two H100s take the two chat models, one each, with room to spare on the part-held one too
    // (which takes which depends on whether one reconcile pass placed both); the embedding model on its host.
    expect(replicas.map((replica) => replica.node)).toEqual(["gpu-node-1", "gpu-node-1", "gpu-node-1"]);
    expect(replicas.map((replica) => replica.gpus.length).sort()).toEqual([0, 1, 1]);
    expect(replicas.flatMap((replica) => replica.gpus).sort()).toEqual([0, 1]);
    // Each asked by its preset's task: the chat and completions models answer text, the embedding model embeds.
    expect(output.match(/Asked [^:]+: "Simulated answer from /g)).toHaveLength(2);
    expect(output).toMatch(/Asked qwen3-embedding-0\.6b: "an embedding of \d+ numbers"/);
    const models = (JSON.parse(await ctl("models", "--json")) as { models: { name: string; preset: string | null }[] }).models;
    expect(models.map((model) => [model.name, model.preset]).sort()).toEqual([
      ["llama-3.1-8b", "llama-3.1-8b"],
      ["llama-3.3-70b-instruct", "llama-3.3-70b-instruct"],
      ["qwen2.5-7b-instruct", "qwen2.5-7b-instruct"],
      ["qwen3-embedding-0.6b", "qwen3-embedding-0.6b"],
    ]);
  });

  it("serves a streamed chat completion to the official openai client through the gateway, not a replica's port", async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: "qwen2.5-7b-instruct", messages: [{ role: "user", content: "count to three" }], stream: true, max_tokens: 12 });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      chunks += 1;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toContain("count to three");
    // The replica itself refuses a caller without its key.
    const replicas = (JSON.parse(await ctl("replicas", "--json", "--model", "qwen2.5-7b-instruct")) as { replicas: ReplicaView[] }).replicas;
    expect((await fetch(`${replicas[0]?.endpoint}/v1/models`)).status).toBe(401);
  });

  it("prints a console link that opens the page without a token in the request, and the token logs in", async () => {
    const lines = output.split("\n");
    const link = new URL(lines[lines.findIndex((line) => line.startsWith("The web console")) + 1]?.trim() ?? "");
    const token = new URLSearchParams(link.hash.slice(1)).get("token") ?? "";
    // A browser sends neither the fragment nor a header: the page itself answers.
    const page = await fetch(`${link.origin}${link.pathname}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const session = await fetch(`${link.origin}/api/v1/session`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await session.json()) as { token: { role: string } }).token.role).toBe("admin");
  });

  it("prints curl and openai SDK lines against the gateway's /v1 that stream an answer when pasted", async () => {
    const lines = output.split("\n");
    const start = lines.findIndex((line) => line.trimStart().startsWith("curl -sN"));
    expect(start).toBeGreaterThan(0);
    const curlCommand = `${lines[start]?.replace(/\\$/, "")} ${lines[start + 1]}`.trim();
    expect(curlCommand).toContain(`${url}/v1/chat/completions`);
    const curlOutput = execFileSync("sh", ["-c", curlCommand], { encoding: "utf8", timeout: 30_000 });
    expect(curlOutput).toContain("data: ");
    // Token by token, as the engine streamed it.
    expect(curlOutput).toContain('"content":"Simulated"');
    expect(curlOutput).toContain('"content":" answer"');
    expect(curlOutput.trim().endsWith("data: [DONE]")).toBe(true);
    // The Node line runs where the openai package is installed (here: this package's own dev dependency).
    const nodeLine = lines.find((line) => line.trimStart().startsWith("node --input-type=module"))?.trim() as string;
    expect(nodeLine).toContain(`baseURL: '${url}/v1'`);
    const nodeOutput = execFileSync("sh", ["-c", nodeLine], { encoding: "utf8", timeout: 30_000, cwd: path.resolve(llmgwBin, "../..") });
    expect(nodeOutput).toContain("Simulated answer");
    const pythonLine = lines.find((line) => line.trimStart().startsWith("python3 -c"))?.trim() as string;
    expect(pythonLine).toContain(`base_url='${url}/v1'`);
  });

  it("prints each thing to try above its lines, and the ctl lines that only read run pasted as printed, after its export line", async () => {
    const lines = output.split("\n");
    const start = lines.indexOf("Try, in another terminal:");
    const tryLines = lines.slice(start + 1, lines.indexOf("", start));
    expect(tryLines.length).toBeGreaterThan(10);
    for (const line of tryLines) expect(line).toMatch(/^( {2}[A-Z][^#]*:| {4}\S.*)$/);
    const commands = tryLines.filter((line) => line.startsWith("    ")).map((line) => line.trim());
    expect(commands[0]).toBe(`export LLMGW_SERVER=${url} LLMGW_TOKEN=${token}`);
    const reading = commands.filter((command) => /^llmgw ctl (nodes|models|replicas|logs|model presets|model plan) /.test(`${command} `));
    expect(reading.map((command) => command.split(" ").slice(0, 3).join(" "))).toEqual([
      "llmgw ctl nodes",
      "llmgw ctl models",
      "llmgw ctl replicas",
      "llmgw ctl logs",
      "llmgw ctl model",
      "llmgw ctl model",
    ]);
    const searchPath = pathWithLlmgw();
    const elsewhere = temporaryDirectory("llmgw-demo-paste-");
    const outputs: string[] = [];
    for (const command of reading) {
      const result = await pasteInShell(`${commands[0]}\n${command}`, elsewhere, searchPath);
      expect(result.stderr, command).toBe("");
      expect(result.code, command).toBe(0);
      outputs.push(result.stdout);
    }
    expect(outputs[0]).toContain("gpu-node-2");
    expect(outputs[2]).toContain("qwen2.5-7b-instruct");
    // Planned against the demo's own fleet: its L40S cards are among the candidates.
    expect(outputs[5]).toContain("l40s-48G");
  });

  it("times each chat replica by its card: decode at the card's bandwidth over the planner's weights per card", async () => {
    const nodes = (JSON.parse(await ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    for (const name of ["llama-3.1-8b", "qwen2.5-7b-instruct"]) {
      const replica = (JSON.parse(await ctl("replicas", "--model", name, "--json")) as { replicas: ReplicaView[] }).replicas[0] as ReplicaView;
      const cardClass = nodes.find((node) => node.name === replica.node)?.gpus.find((gpu) => gpu.index === replica.gpus[0])?.class as string;
      // Planned from the model's own source, against the demo's fleet: the figures the reconciler gave the replica.
      const shown = JSON.parse(await ctl("model", "show", name, "--json")) as { profiles: { name: string; source: string }[] };
      const source = shown.profiles.find((profile) => profile.name === replica.profile)?.source as string;
      const plan = JSON.parse(await ctl("model", "plan", source, "--json")) as Plan;
      const candidate = plan.candidates.find((entry) => entry.pool.gpu_class === cardClass && entry.gpus === replica.gpus.length && entry.engine === "vllm");
      const planned = ((cardClassInfo(cardClass)?.bandwidthGBps ?? 0) * 1e9) / (candidate?.weights_bytes_per_card ?? Number.NaN);
      expect(planned, name).toBeGreaterThan(10);
      expect(await ctl("logs", replica.id), name).toContain(`decode ${planned.toFixed(0)} tokens/s (${cardClass} at`);
      // The stream's tokens come no faster than that rate (a defaults-timed replica, 1000 tokens/s, would):
      // only an upper bound, since a busy machine's timers only ever add delay.
      const stream = await client.chat.completions.create({ model: name, messages: [{ role: "user", content: "Explain the tides" }], max_tokens: 40, stream: true });
      const arrivals: number[] = [];
      for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) arrivals.push(performance.now());
      expect(arrivals).toHaveLength(40);
      const rate = (arrivals.length - 1) / (((arrivals.at(-1) as number) - (arrivals[0] as number)) / 1000);
      expect(rate, name).toBeLessThan(planned * 1.5);
    }
  });

  it("plans every fixture model against its live fleet, with the cards its replicas hold taken", async () => {
    const nodes = (JSON.parse(await ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;
    const free = (name: string) => nodes.find((node) => node.name === name)?.gpus.filter((gpu) => gpu.replica === null).length;
    const checkpoints = temporaryDirectory("llmgw-demo-plan-");
    for (const name of readdirSync(fixturesFolder)) {
      const folder = path.join(checkpoints, name);
      await writeSyntheticCheckpoint(folder, fixtureConfig(name), checkpointTensors(fixtureArchitecture(name)), 2);
      const plan = JSON.parse(await ctl("model", "plan", folder, "--json")) as Plan;
      // gpu-node-1's H100s are two pools of one card: the one part-held by another process has less room, so it is not alike its twin.
      const h100 = new Map(plan.candidates.filter((candidate) => candidate.pool.gpu_class === "h100").map((candidate) => [candidate.pool.card_memory_bytes, candidate.pool]));
      expect([...h100.keys()].sort(), name).toEqual([60 * 1024 ** 3, 80 * 1024 ** 3]);
      expect([...h100.values()].reduce((sum, pool) => sum + pool.cards_free, 0), name).toBe(free("gpu-node-1"));
      expect([...h100.values()].map((pool) => pool.cards_total), name).toEqual([1, 1]);
      expect(plan.candidates.some((candidate) => candidate.pool.gpu_class === "l40s" && candidate.pool.cards_free === free("gpu-node-2")), name).toBe(true);
      // A checkpoint quantised by its publisher (DeepSeek-V3's FP8) is served as it is, by vLLM or SGLang: llama.cpp would need a GGUF of it, which is another source.
      const prequantised = (fixtureConfig(name) as Record<string, unknown>).quantization_config !== undefined;
      expect(plan.candidates.some((candidate) => candidate.pool.gpu_class === "cpu"), name).toBe(!prequantised);
    }
  }, 180_000);

  it("leaves the on-demand model unstarted, places a second replica on `ctl scale --min 2`, and brings back a killed engine", async () => {
    const models = (JSON.parse(await ctl("models", "--json")) as { models: { name: string; state: string }[] }).models;
    expect(models.find((model) => model.name === "llama-3.3-70b-instruct")?.state).toBe("on-demand");
    await ctl("scale", "qwen2.5-7b-instruct", "--min", "2");
    const qwenReady = async () => (JSON.parse(await ctl("replicas", "--model", "qwen2.5-7b-instruct", "--json")) as { replicas: ReplicaView[] }).replicas.filter((replica) => replica.state === "ready");
    const two = await waitFor(async () => {
      const ready = await qwenReady();
      return ready.length >= 2 && ready;
    }, 60_000, "a second ready replica of qwen2.5-7b-instruct after ctl scale --min 2", 500);
    expect(two).toHaveLength(2);
    const victim = two[0] as ReplicaView;
    process.kill(victim.pid as number, "SIGKILL");
    const back = await waitFor(async () => {
      const now = await qwenReady();
      return now.length === 2 && !now.some((replica) => replica.id === victim.id) && now;
    }, 60_000, `two ready replicas of qwen2.5-7b-instruct again, without ${victim.id} whose engine was killed`, 500);
    expect(back).toHaveLength(2);
    expect(back.map((replica) => replica.id)).not.toContain(victim.id);
  }, 150_000);

  it("stops replicas, agents and server on Ctrl-C, leaving no engine and no files behind", async () => {
    const replicas = (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
    const enginePids = replicas.map((replica) => replica.pid as number);
    expect(await running(enginePids)).toEqual(enginePids);
    const dataDir = path.dirname((/state in (\S+)\)/.exec(output) ?? [])[1] as string);
    expect(existsSync(dataDir)).toBe(true);

    process.kill(-(demo.pid as number), "SIGINT");
    expect(await exited).toBe(0);
    expect(started.output()).toContain("Stopped.");
    expect(await running(enginePids)).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe("llmgw demo, interrupted while it starts", () => {
  it("stops the agents it already started and removes its folder", async () => {
    const demo = spawn(process.execPath, [llmgwBin, "demo", "--listen", "127.0.0.1:0"], { detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    demo.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    demo.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));
    // The server line comes before the agents have joined: interrupt there.
    const dataDir = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no server line in 60 s:\n${output}`)), 60_000);
      demo.stdout?.on("data", () => {
        const match = /state in (\S+)\/server\)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1] as string);
        }
      });
    });
    // Twice, as an impatient person does: the second must not cut the clean-up short.
    process.kill(-(demo.pid as number), "SIGINT");
    setTimeout(() => {
      if (demo.exitCode === null) process.kill(-(demo.pid as number), "SIGINT");
    }, 50);
    expect(await exited).toBe(130);
    const agentsLeft = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.includes(dataDir));
    expect(agentsLeft).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  });
});
