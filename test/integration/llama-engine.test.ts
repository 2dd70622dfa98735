import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLlamaEngine, type LlamaEngineHandle } from "../../src/engines/llama/llama-engine.js";
import { llamacppDriver } from "../../src/engines/drivers/llamacpp.js";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";

/** The built-in engine in this process, on the tiny GGUF: what the agent and the gateway read from it. */
describe("llmgw's built-in llama.cpp engine over HTTP", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-llama-engine-"));
  let engine: LlamaEngineHandle;
  const key = "engine-key";
  const post = (route: string, body: unknown, authorization = `Bearer ${key}`) =>
    fetch(`${engine.url}${route}`, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(body) });

  beforeAll(async () => {
    const model = await writeGgufFile(path.join(directory, "tiny.gguf"), tinyModelGguf());
    engine = await startLlamaEngine({
      argv: ["--model", model, "--port", "0", "--alias", "tiny", "--ctx-size", "256", "--parallel", "1", "--threads", "1", "--metrics"],
      environment: { LLAMA_API_KEY: key, LLMGW_LLAMA_QUEUE: "0" },
      log: () => undefined,
    });
    await engine.loaded;
  }, 180_000);

  afterAll(async () => {
    await engine?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("asks for the key on the API and leaves /health and /metrics open to the agent", async () => {
    const refused = await post("/v1/completions", { model: "tiny", prompt: "hi" }, "Bearer wrong");
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: { code: 401, message: "Invalid API Key", type: "authentication_error", param: null } });
    expect((await fetch(`${engine.url}/health`)).status).toBe(200);
    expect((await fetch(`${engine.url}/metrics`)).status).toBe(200);
  });

  it("counts tokens under llama-server's metric names, which the llamacpp driver reads", async () => {
    const answer = (await (await post("/v1/completions", { model: "tiny", prompt: "one two", max_tokens: 3, temperature: 0 })).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    expect(answer.usage.completion_tokens).toBe(3);
    const metrics = llamacppDriver.parseMetrics(await (await fetch(`${engine.url}/metrics`)).text());
    expect(metrics.promptTokensTotal).toBeGreaterThanOrEqual(answer.usage.prompt_tokens);
    expect(metrics.generationTokensTotal).toBeGreaterThanOrEqual(3);
    expect(metrics.requestsRunning).toBe(0);
  });

  it("ends an answer at a stop string, leaving it out", async () => {
    const free = (await (await post("/v1/completions", { model: "tiny", prompt: "abc", max_tokens: 8, temperature: 0 })).json()) as { choices: { text: string }[] };
    const text = free.choices[0]?.text ?? "";
    const stop = text.slice(3, 5);
    const stopped = (await (await post("/v1/completions", { model: "tiny", prompt: "abc", max_tokens: 8, temperature: 0, stop: [stop] })).json()) as { choices: { text: string; finish_reason: string }[] };
    expect(stopped.choices[0]?.text).toBe(text.slice(0, text.indexOf(stop)));
    expect(stopped.choices[0]?.finish_reason).toBe("stop");
  });

  it("answers 503 past its queue while its one slot is busy, and 400 for a prompt over a slot", async () => {
    const busy = await post("/v1/completions", { model: "tiny", prompt: "long", max_tokens: 240, temperature: 0, stream: true });
    const reader = (busy.body as ReadableStream<Uint8Array>).getReader();
    // A first chunk read: the request holds the only slot until its stream ends.
    await reader.read();
    const refused = await post("/v1/completions", { model: "tiny", prompt: "next", max_tokens: 2 });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe("unavailable_error");
    while (!(await reader.read()).done);
    const over = await post("/v1/completions", { model: "tiny", prompt: "x".repeat(400), max_tokens: 2 });
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: { message: string } }).error.message).toContain("exceeds the available context size");
  });

  it("refuses embeddings when not started with --embedding, as llama-server does", async () => {
    const refused = await post("/v1/embeddings", { model: "tiny", input: "hi" });
    expect(refused.status).toBe(501);
  });
});
