import { writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import type { NodeView, PresetProfileView, PresetView, ReplicaView } from "../../src/protocol/views.js";
import { runCli } from "../support/processes.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * `llmgw demo --gguf PATH` with the tiny llama GGUF: the simulated GPU nodes
 * as always, and a real CPU node of this machine whose llama.cpp (built into
 * llmgw) serves the file, placed by the reconciler.
 */
describe("llmgw demo --gguf, with a GGUF the user has", () => {
  let started: DemoProcess;
  let directory: string;
  let ctl: (...args: string[]) => Promise<string>;

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-demo-gguf-");
    const file = path.join(directory, "Tiny Chat.Q8.gguf");
    await writeGgufFile(file, tinyModelGguf());
    started = await startDemoProcess(180_000, ["--gguf", file]);
    ctl = async (...args: string[]) => {
      const result = await runCli(["ctl", "--server", started.url, "--token", started.token, ...args]);
      if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed: ${result.stderr}`);
      return result.stdout;
    };
  }, 200_000);

  afterAll(() => stopDemo(started), 40_000);

  it("places the GGUF on the real CPU node, and says it answers for real where the others are simulated", async () => {
    const replicas = (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
    const tiny = replicas.find((replica) => replica.model === "tiny-chat.q8");
    expect(tiny).toMatchObject({ node: "cpu-node", state: "ready", gpus: [], engine: "llamacpp", llama_cpp: { kind: "built-in", build: "cpu" } });
    expect(replicas.filter((replica) => replica.node !== "cpu-node").every((replica) => replica.llama_cpp === null)).toBe(true);
    const nodes = (JSON.parse(await ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;
    expect(nodes.find((node) => node.name === "cpu-node")).toMatchObject({ simulated: false, llama_cpp: { kind: "built-in" } });
    const output = started.output();
    expect(output).toMatch(/^\s+tiny-chat\.q8\s+cpu-node\s+CPU\s+llamacpp\s+\S+\s+for real \(llama\.cpp\)$/m);
    expect(output).toMatch(/^\s+qwen2\.5-7b-instruct\s+gpu-node-\d.*\ssimulated$/m);
    // The demo asked it through the gateway, and llama.cpp answered, not the simulated engine.
    expect(output).toMatch(/Asked tiny-chat\.q8: "(?!Simulated)[^"]+"/);
    // ctl replicas names the llama.cpp it runs.
    expect(await ctl("replicas", "--model", "tiny-chat.q8")).toMatch(/llamacpp \(built-in [\d.]+, cpu build\)/);
  });

  it("streams real tokens from it through the gateway to the openai client", async () => {
    const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
    const answer = await client.chat.completions.create({ model: "tiny-chat.q8", messages: [{ role: "user", content: "hello" }], max_tokens: 6, temperature: 0 });
    expect(answer.usage?.completion_tokens).toBe(6);
    expect(answer.choices[0]?.message.content).not.toContain("Simulated");
  });

  it("says which presets answer for real on this machine's CPU: only on the real node, by its host memory", async () => {
    const presets = (JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] }).presets;
    const small = presets.find((preset) => preset.name === "qwen2.5-0.5b-instruct");
    expect(small?.on_cpu).toMatchObject({ profile: "cpu", node: "cpu-node", llama_cpp: { kind: "built-in" }, why_not: null });
    expect(presets.find((preset) => preset.name === "llama-3.3-70b-instruct")?.on_cpu).toBeNull();
    // The small embedding model as well: its planned memory is its file (84,106,624 bytes as published, within the
    // planner's GGUF tolerance) with its two slots' KV cache and llama.cpp's own, inside the 1 GiB it reserves.
    const embedder = presets.find((preset) => preset.name === "nomic-embed-text-v1.5");
    expect(embedder?.on_cpu).toMatchObject({ profile: "cpu", node: "cpu-node", llama_cpp: { kind: "built-in" }, why_not: null });
    const cpu = embedder?.profiles[0] as PresetProfileView;
    expect(Math.abs((cpu.weights_bytes ?? 0) - 84_106_624) / 84_106_624).toBeLessThan(0.05);
    expect(cpu.planned_memory_bytes).toBeGreaterThan(cpu.weights_bytes ?? Number.NaN);
    expect(cpu.planned_memory_bytes).toBeLessThanOrEqual(cpu.memory_bytes ?? 0);
    const table = await ctl("model", "presets");
    expect(table).toMatch(/qwen2\.5-0\.5b-instruct .*yes on cpu-node \(built-in, cpu build\)/);
    expect(table).toMatch(/^nomic-embed-text-v1\.5\s+embeddings\s+0\.1 GiB\s+cpu: 1\.0 GiB, 1 core\s+Apache-2\.0\s.*yes on cpu-node \(built-in, cpu build\)$/m);
  });
});

describe("llmgw demo --gguf with a file that is not a GGUF", () => {
  it("is refused at once, naming the file, with nothing started", async () => {
    const file = path.join(temporaryDirectory("llmgw-demo-gguf-bad-"), "model.safetensors");
    writeFileSync(file, "not a gguf");
    const result = await runCli(["demo", "--listen", "127.0.0.1:0", "--gguf", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`--gguf ${file}: not a GGUF file`);
    expect(result.stdout).not.toContain("server ");
  });
});
