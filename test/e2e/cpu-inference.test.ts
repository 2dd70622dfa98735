import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyLoraGguf, tinyModelGguf, tinyModelShape, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { ctlAgainst, ctlOutput, freePort, llmgwBin, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * Real llama.cpp inference end to end: a server, one agent that simulates
 * nothing (a CPU node without llama-server, so it runs llmgw's built-in
 * engine), the tiny GGUF fetched from an HTTP mirror, and the official
 * openai client through the gateway.
 */
describe("real llama.cpp inference on the CPU, through a real agent, server and gateway", () => {
  let directory: string;
  let hub: HubServer;
  let server: ServerProcess;
  let agent: ChildProcess;
  let mirror: string;
  let client: OpenAI;
  const enginePids = new Set<number>();
  const modelBytes = tinyModelGguf();
  const context = 256;

  const ctl = (...args: string[]) => ctlOutput(server, args);
  const get = async <T>(route: string): Promise<T> => {
    const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const readyReplica = async (model: string, except?: string): Promise<ReplicaView> =>
    await waitFor(async () => {
      const list = (await get<{ replicas: ReplicaView[] }>(`/api/v1/replicas?model=${model}`)).replicas;
      for (const replica of list) if (replica.pid !== null) enginePids.add(replica.pid);
      return list.find((replica) => replica.state === "ready" && replica.id !== except);
    }, 180_000, `a ready replica of ${model}`);
  const chat = async (model: string, content: string, maxTokens = 8) =>
    await client.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: maxTokens, temperature: 0 });

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-cpu-inference-e2e-");
    const files = path.join(directory, "mirror");
    await writeGgufFile(path.join(files, "tiny.gguf"), modelBytes);
    await writeGgufFile(path.join(files, "tiny-lora.gguf"), tinyLoraGguf());
    await writeGgufFile(path.join(files, "qwen2-lora.gguf"), tinyLoraGguf({ architecture: "qwen2" }));
    hub = await startHubServer({ repositories: {}, mirrorRoot: files });
    mirror = `${hub.url}/mirror`;
    writeFileSync(
      path.join(directory, "server.yaml"),
      `gateway:\n  auth: open\nnodes:\n  heartbeat_deadline: 30s\n  settling_window: 2s\nreconcile:\n  interval: 500ms\n  lease: 3s\n  withdraw_delay: 1500ms\n`,
    );
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${await freePort()}`] });
    const joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
    // PATH without llama-server (this machine has none), so the agent runs the built-in engine.
    agent = spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", "cpu-node", "--data-dir", path.join(directory, "agent")], {
      detached: true,
      stdio: ["ignore", "ignore", "ignore"],
      env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined, CUDA_VISIBLE_DEVICES: "" },
    });
    await waitFor(async () => (await get<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes.find((node) => node.state === "ready"), 60_000, "the CPU node to join");
    const checksum = createHash("sha256").update(modelBytes).digest("hex");
    const model = path.join(directory, "tiny.yaml");
    writeFileSync(
      model,
      `name: tiny\ncontext: ${context}\nprofiles:\n  - { engine: llamacpp, source: "${mirror}/tiny.gguf#sha256=${checksum}", memory_gb: 1, cpu_cores: 0.5, slots: 2 }\n`,
    );
    await ctl("model", "add", "-f", model, "--wait");
    const embed = path.join(directory, "tiny-embed.yaml");
    writeFileSync(embed, `name: tiny-embed\ncontext: ${context}\nprofiles:\n  - { engine: llamacpp, source: "${mirror}/tiny.gguf", memory_gb: 1, cpu_cores: 0.5, args: ["--embedding"] }\n`);
    await ctl("model", "add", "-f", embed, "--wait");
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
  }, 300_000);

  afterAll(async () => {
    if (agent) killGroup(agent.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
    await hub?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it("fetches the GGUF into the agent's cache with its checksum and runs it on the built-in engine's CPU build", async () => {
    const replica = await readyReplica("tiny");
    expect(replica.node).toBe("cpu-node");
    expect(replica.gpus).toEqual([]);
    const nodes = (await get<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes;
    expect(nodes[0]?.engines).toContain("llamacpp");
    const log = await ctl("logs", replica.id);
    expect(log).toContain("llmgw llama-engine: cpu build of llama.cpp");
    expect(log).toContain('serving "tiny" with 2 slot(s)');
  }, 200_000);

  it("streams real generated tokens through the gateway, with usage from the engine's own counts", async () => {
    const stream = await client.chat.completions.create({
      model: "tiny",
      messages: [{ role: "user", content: "Say something" }],
      max_tokens: 12,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta.content;
      if (text) pieces.push(text);
      if (chunk.usage) usage = chunk.usage;
    }
    const text = pieces.join("");
    expect(pieces.length).toBeGreaterThan(1);
    expect(text).not.toContain("Simulated");
    // max_tokens is honoured: the tiny model never says its end-of-turn token, so it stops at 12.
    expect(usage?.completion_tokens).toBe(12);
    // The ChatML prompt as the model's template renders it, in the model's own tokens: more than the text's 4-bytes-a-token estimate.
    expect(usage?.prompt_tokens).toBeGreaterThan(Math.ceil("Say something".length / 4) + 4);
    const again = await chat("tiny", "Say something", 12);
    expect(again.choices[0]?.message.content).toBe(text);
    expect(again.usage?.prompt_tokens).toBe(usage?.prompt_tokens);
    expect(again.choices[0]?.finish_reason).toBe("length");
  });

  it("gives the same text twice at temperature 0", async () => {
    const first = (await chat("tiny", "one two three", 10)).choices[0]?.message.content;
    const second = (await chat("tiny", "one two three", 10)).choices[0]?.message.content;
    expect(first).toBe(second);
    expect(first?.length).toBeGreaterThan(0);
  });

  it("refuses at the gateway a prompt over the context, counted with the model's own vocabulary from the GGUF", async () => {
    // One token per byte in this byte-level vocabulary, where the estimate would count a quarter of that.
    const long = "x ".repeat(context);
    const refused = await chat("tiny", long, 4).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/over model tiny's context of 256/);
  });

  it("queues requests beyond the two slots, and answers every one", async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => chat("tiny", `request ${index}`, 6)));
    for (const answer of answers) expect(answer.usage?.completion_tokens).toBe(6);
  });

  it("serves embeddings of the model's dimension", async () => {
    await readyReplica("tiny-embed");
    const result = await client.embeddings.create({ model: "tiny-embed", input: ["hello", "world"] });
    expect(result.data).toHaveLength(2);
    expect(result.data[0]?.embedding).toHaveLength(tinyModelShape.embedding);
    expect(result.data[0]?.embedding).not.toEqual(result.data[1]?.embedding);
  });

  it("refuses an adapter of another architecture at the door, and serves one of its own that changes the answer", async () => {
    const refused = await ctlAgainst(server, ["model", "adapters", "tiny", "--add", `other=${mirror}/qwen2-lora.gguf`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("is a LoRA for qwen2, but tiny is a llama model");
    const base = (await chat("tiny", "hello there", 10)).choices[0]?.message.content;
    const before = await readyReplica("tiny");
    await ctl("model", "adapters", "tiny", "--add", `style=${mirror}/tiny-lora.gguf`, "--wait");
    await readyReplica("tiny", before.id);
    const adapted = await waitFor(() => chat("style", "hello there", 10).catch(() => undefined), 60_000, "the adapter through the gateway");
    expect(adapted.choices[0]?.message.content).not.toBe(base);
    // The base model's own requests are not answered by the adapter.
    expect((await chat("tiny", "hello there", 10)).choices[0]?.message.content).toBe(base);
  }, 300_000);

  it("ends a stream with an error when its engine is killed with -9, and the reconciler starts another", async () => {
    // The tiny model writes its whole answer in tens of milliseconds, so a kill
    // sent when the first content chunk arrives can land after the engine has
    // finished. Such a trial cut nothing (the client saw the finish), so it is
    // run again on the replacement; a trial that cut the answer must end in an error.
    type Trial = { victim: ReplicaView; received: number; finished: boolean; ending: string };
    const trials: Trial[] = [];
    let previous: string | undefined;
    while (trials.length < 4) {
      const victim = await readyReplica("tiny", previous);
      previous = victim.id;
      const stream = await client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "a long answer" }], max_tokens: 200, temperature: 1, stream: true });
      const trial: Trial = { victim, received: 0, finished: false, ending: "" };
      trial.ending = await (async () => {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.finish_reason) trial.finished = true;
          if (chunk.choices[0]?.delta.content) trial.received += 1;
          if (trial.received === 1 && victim.pid !== null) process.kill(victim.pid, "SIGKILL");
        }
      })().then(
        () => "ended",
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      trials.push(trial);
      if (!trial.finished) break;
    }
    const cut = trials.find((trial) => !trial.finished);
    expect(cut, `every one of ${trials.length} answers finished before its engine died`).toBeDefined();
    if (cut === undefined) return;
    expect(cut.ending).not.toBe("ended");
    expect(cut.received).toBeLessThan(200);
    const replacement = await readyReplica("tiny", cut.victim.id);
    expect(replacement.id).not.toBe(cut.victim.id);
    expect((await chat("tiny", "still there?", 4)).usage?.completion_tokens).toBe(4);
  }, 300_000);
});
