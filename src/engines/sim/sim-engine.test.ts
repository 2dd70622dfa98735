import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { EngineLaunchInput } from "../driver.js";
import { engineDrivers } from "../drivers/index.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { vllmDriver } from "../drivers/vllm.js";
import { llamaCppLoraSelection, llamacppDriver } from "../drivers/llamacpp.js";
import { sglangDriver } from "../drivers/sglang.js";
import { waitFor } from "../../../test/support/fake-engine.js";
import { SimEngineExited, startSimEngine, type SimEngineHandle } from "./sim-engine.js";

const model = "qwen2.5-7b";

/** An answer's first line: the model's name and the prompt's first words, which say who answered what. */
const firstLine = (content: string | null | undefined) => content?.split("\n\n")[0];
const running: SimEngineHandle[] = [];

interface StartedSim {
  readonly sim: SimEngineHandle;
  readonly client: OpenAI;
  readonly logLines: string[];
  readonly exitCodes: number[];
}

/**
 * A simulated vLLM replica on a free loopback port, started from the argv the
 * real driver builds. Fast by default; tests that need a request to last say so.
 */
async function startSim(overrides: Partial<EngineLaunchInput> = {}, environment: Record<string, string> = {}): Promise<StartedSim> {
  const launch = vllmDriver.build(testLaunchInput({ port: 0, context: 4096, ...overrides }));
  const logLines: string[] = [];
  const exitCodes: number[] = [];
  const sim = await startSimEngine({
    engine: "vllm",
    argv: launch.argv.slice(1),
    environment: { ...launch.env, LLMGW_SIM_SPEED: "100", ...environment },
    log: (line) => logLines.push(line),
    exit: (code) => exitCodes.push(code),
  });
  running.push(sim);
  // maxRetries 0: a retried 500 would hide what the engine answered.
  const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
  return { sim, client, logLines, exitCodes };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((sim) => sim.close()));
});

async function metricsOf(sim: SimEngineHandle) {
  const text = await (await fetch(`${sim.url}/metrics`)).text();
  return { text, ...vllmDriver.parseMetrics(text) };
}

describe("the simulated engine over HTTP", () => {
  it("answers a chat completion deterministically, from the prompt, with usage", async () => {
    const { client } = await startSim();
    const completion = await client.chat.completions.create({
      model,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Say hello to the simulated world" },
      ],
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.model).toBe(model);
    expect(firstLine(completion.choices[0]?.message.content)).toBe("Simulated answer from qwen2.5-7b: Say hello to the simulated world");
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    // "system: Be brief.\nuser: Say hello to the simulated world" is 56 characters: 14 tokens at four characters each.
    // The first line and then a body: "Say hello…" is an instruction of six words, answered in a paragraph or two.
    const completionTokens = completion.usage?.completion_tokens ?? 0;
    expect(completionTokens).toBeGreaterThanOrEqual(10 + 40);
    expect(completion.usage).toEqual({ prompt_tokens: 14, completion_tokens: completionTokens, total_tokens: 14 + completionTokens });
  });

  it("streams the same answer as separate chunks, ending with [DONE] and usage when asked", async () => {
    const { client, sim } = await startSim();
    const messages = [{ role: "user" as const, content: "Stream these words one by one" }];
    const whole = await client.chat.completions.create({ model, messages });
    const stream = await client.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
    const pieces: string[] = [];
    let finishReason: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      const choice = chunk.choices[0];
      if (choice?.delta.content) pieces.push(choice.delta.content);
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces.length).toBe(whole.usage?.completion_tokens);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(whole.choices[0]?.message.content);
    expect(finishReason).toBe("stop");
    expect(usage).toEqual(whole.usage);

    const raw = await fetch(`${sim.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages, stream: true }),
    });
    expect(raw.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect((await raw.text()).trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("stops at max_tokens with finish reason length, and fills max_tokens when told to ignore the end", async () => {
    const { client } = await startSim();
    const short = await client.chat.completions.create({ model, messages: [{ role: "user", content: "a b c d e f" }], max_tokens: 3 });
    expect(short.choices[0]?.message.content).toBe("Simulated answer from");
    expect(short.choices[0]?.finish_reason).toBe("length");
    expect(short.usage?.completion_tokens).toBe(3);

    const full = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 40,
      // vLLM's extension, passed through the client's body.
      ...({ ignore_eos: true } as object),
    });
    expect(full.usage?.completion_tokens).toBe(40);
    expect(full.choices[0]?.finish_reason).toBe("stop");
  });

  it("serves the legacy completions API with its default of 16 tokens, streamed or not", async () => {
    const { client } = await startSim();
    const prompt = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    const completion = await client.completions.create({ model, prompt });
    expect(completion.object).toBe("text_completion");
    expect(completion.usage?.completion_tokens).toBe(16);
    expect(completion.choices[0]?.finish_reason).toBe("length");
    const stream = await client.completions.create({ model, prompt, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    expect(text).toBe(completion.choices[0]?.text);
  });

  it("embeds text deterministically, as base64 for the official client and as floats when asked", async () => {
    const { client } = await startSim();
    const first = await client.embeddings.create({ model, input: ["the same text", "other text"] });
    const again = await client.embeddings.create({ model, input: "the same text", encoding_format: "float" });
    expect(first.data).toHaveLength(2);
    expect(first.data[0]?.embedding).toHaveLength(384);
    const [same, other, repeated] = [first.data[0]?.embedding ?? [], first.data[1]?.embedding ?? [], again.data[0]?.embedding ?? []];
    expect(repeated.map((value) => Math.fround(value))).toEqual(same);
    expect(other).not.toEqual(same);
    const norm = Math.sqrt(same.reduce((total, value) => total + value * value, 0));
    expect(norm).toBeCloseTo(1, 5);
    expect(first.usage.prompt_tokens).toBeGreaterThan(0);
    const narrow = await client.embeddings.create({ model, input: "x", dimensions: 8 });
    expect(narrow.data[0]?.embedding).toHaveLength(8);
  });

  it("lists the model and its LoRA adapters, owned by llmgw-sim, and answers for an adapter by name", async () => {
    const { client } = await startSim({
      adapters: [
        { name: "qwen-sql", path: "/a/qwen-sql" },
        { name: "qwen-legal", path: "/a/qwen-legal" },
      ],
    });
    const models = [];
    for await (const entry of client.models.list()) models.push(entry);
    expect(models.map((entry) => entry.id)).toEqual([model, "qwen-sql", "qwen-legal"]);
    expect(models.every((entry) => entry.owned_by === "llmgw-sim")).toBe(true);
    expect(models[1]).toMatchObject({ parent: model, root: "/a/qwen-sql" });
    const answer = await client.chat.completions.create({ model: "qwen-sql", messages: [{ role: "user", content: "select" }] });
    expect(firstLine(answer.choices[0]?.message.content)).toBe("Simulated answer from qwen-sql: select");
  });

  it("loads and unloads an adapter at runtime, as vLLM does with runtime LoRA updating on", async () => {
    const { sim, client } = await startSim({ adapters: [{ name: "qwen-sql", path: "/a/qwen-sql" }] });
    const post = (path: string, body: unknown) => fetch(`${sim.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const loaded = await post("/v1/load_lora_adapter", { lora_name: "qwen-legal", lora_path: "/a/qwen-legal" });
    expect(loaded.status).toBe(200);
    expect(await loaded.text()).toBe("Success: LoRA adapter 'qwen-legal' added successfully.");
    const answer = await client.chat.completions.create({ model: "qwen-legal", messages: [{ role: "user", content: "sue" }] });
    expect(firstLine(answer.choices[0]?.message.content)).toBe("Simulated answer from qwen-legal: sue");
    expect((await post("/v1/load_lora_adapter", { lora_name: "qwen-legal", lora_path: "/a/qwen-legal" })).status).toBe(400);
    expect((await post("/v1/unload_lora_adapter", { lora_name: "qwen-legal" })).status).toBe(200);
    await expect(client.chat.completions.create({ model: "qwen-legal", messages: [{ role: "user", content: "sue" }] })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await post("/v1/unload_lora_adapter", { lora_name: "qwen-legal" })).status).toBe(404);
  });

  it("has no runtime LoRA endpoints when started without LoRA, as vLLM", async () => {
    const { sim } = await startSim();
    const response = await fetch(`${sim.url}/v1/load_lora_adapter`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ lora_name: "x", lora_path: "/x" }) });
    expect(response.status).toBe(404);
  });

  it("answers 404 for a model it does not serve, and 400 past its context, in OpenAI's error shape", async () => {
    const { client } = await startSim({ context: 64 });
    await expect(client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const long = "word ".repeat(100);
    await expect(client.chat.completions.create({ model, messages: [{ role: "user", content: long }] })).rejects.toThrow(
      /maximum context length is 64 tokens/,
    );
    await expect(client.chat.completions.create({ model, messages: [] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it("says it is simulated on /health", async () => {
    const { sim } = await startSim();
    const response = await fetch(`${sim.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "ok", simulated: true, engine: "vllm", model });
  });

  it("counts tokens and latencies under vLLM's metric names", async () => {
    const { client, sim } = await startSim();
    const answers = [
      await client.chat.completions.create({ model, messages: [{ role: "user", content: "first question" }] }),
      await client.chat.completions.create({ model, messages: [{ role: "user", content: "second, longer question here" }], stream: false }),
    ];
    const metrics = await metricsOf(sim);
    expect(metrics.promptTokensTotal).toBe(answers.reduce((total, answer) => total + (answer.usage?.prompt_tokens ?? 0), 0));
    expect(metrics.generationTokensTotal).toBe(answers.reduce((total, answer) => total + (answer.usage?.completion_tokens ?? 0), 0));
    expect(metrics.requestsRunning).toBe(0);
    expect(metrics.requestsWaiting).toBe(0);
    expect(metrics.kvCacheUsage).toBe(0);
    expect(metrics.text).toContain(`vllm:time_to_first_token_seconds_count{model_name="${model}"} 2`);
    expect(metrics.text).toContain(`vllm:e2e_request_latency_seconds_count{model_name="${model}"} 2`);
    expect(metrics.text).toContain(`vllm:request_success_total{model_name="${model}",finished_reason="stop"} 2`);
  });

  it("serves one request at a time with --max-num-seqs 1: the second waits in the queue until the first leaves", async () => {
    // One token a second: the first request holds its slot until the test lets it go.
    const { client, sim } = await startSim({ extraArgs: ["--max-num-seqs", "1"] }, { LLMGW_SIM_SPEED: "0.001" });
    const events: string[] = [];
    const firstAbort = new AbortController();
    const first = await client.chat.completions.create(
      { model, messages: [{ role: "user", content: "hold the slot" }], stream: true, max_tokens: 1000, ...({ ignore_eos: true } as object) },
      { signal: firstAbort.signal },
    );
    const firstDone = (async () => {
      try {
        for await (const _chunk of first) events.push("first: chunk");
      } catch {
        events.push("first: ended");
      }
    })();
    await waitFor(async () => (await metricsOf(sim)).requestsRunning === 1, 10_000, "the first request runs", 25);

    const second = client.chat.completions
      .create({ model, messages: [{ role: "user", content: "wait your turn" }], max_tokens: 1 }, { timeout: 120_000 })
      .then((answer) => {
        events.push("second: answered");
        return answer;
      });
    await waitFor(async () => (await metricsOf(sim)).requestsWaiting === 1, 10_000, "the second request waits", 25);
    expect((await metricsOf(sim)).requestsRunning).toBe(1);
    expect(events).not.toContain("second: answered");

    // The first client gives up: its slot goes to the request that waited.
    firstAbort.abort();
    await firstDone;
    const answer = await second;
    expect(answer.choices[0]?.message.content).toBe("Simulated");
    expect(events.indexOf("first: ended")).toBeLessThan(events.indexOf("second: answered"));
    await waitFor(async () => {
      const metrics = await metricsOf(sim);
      return metrics.requestsRunning === 0 && metrics.requestsWaiting === 0;
    }, 10_000, "the queue drains", 25);
  });

  it("logs a startup line that says it is simulated, and each request", async () => {
    const { client, logLines } = await startSim();
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "log me" }] });
    expect(logLines.some((line) => line.includes("simulated vllm serving \"qwen2.5-7b\"") && line.includes("cards [0]"))).toBe(true);
    expect(logLines.some((line) => line.startsWith("POST /v1/chat/completions model=qwen2.5-7b") && line.includes("finish=stop"))).toBe(true);
  });
});

describe("choosing an adapter the way each engine expects", () => {
  const adapters = [
    { name: "qwen-sql", path: "/a/qwen-sql.gguf" },
    { name: "qwen-legal", path: "/a/qwen-legal.gguf", scale: 0.5 },
  ];

  it("llama.cpp: the base model's name with the lora list llamaCppLoraSelection builds", async () => {
    const launch = llamacppDriver.build(testLaunchInput({ port: 0, weightsPath: "/w/base.gguf", adapters }));
    const sim = await startSimEngine({ engine: "llamacpp", argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined });
    running.push(sim);
    const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: "hello" }],
      ...({ lora: llamaCppLoraSelection(adapters, "qwen-legal") } as object),
    });
    expect(firstLine(answer.choices[0]?.message.content)).toBe("Simulated answer from qwen-legal: hello");
    const base = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], ...({ lora: llamaCppLoraSelection(adapters, undefined) } as object) });
    expect(firstLine(base.choices[0]?.message.content)).toBe("Simulated answer from qwen2.5-7b: hello");
  });

  it("SGLang: BASE:ADAPTER as the model", async () => {
    const launch = sglangDriver.build(testLaunchInput({ port: 0, adapters }));
    const sim = await startSimEngine({ engine: "sglang", argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined });
    running.push(sim);
    const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: `${model}:qwen-sql`, messages: [{ role: "user", content: "hello" }] });
    expect(firstLine(answer.choices[0]?.message.content)).toBe("Simulated answer from qwen-sql: hello");
  });
});

describe("every driver's health path and metrics parser work against the simulation of its engine", () => {
  for (const driver of engineDrivers) {
    it(`${driver.engine}: healthy at ${driver.build(testLaunchInput()).healthPath}, metrics readable at ${driver.build(testLaunchInput()).metricsPath}`, async () => {
      const launch = driver.build(testLaunchInput({ port: 0, cards: [0] }));
      const sim = await startSimEngine({ engine: driver.engine, argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined, exit: () => undefined });
      running.push(sim);
      expect((await fetch(`${sim.url}${launch.healthPath}`)).status).toBe(200);
      const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const answer = await client.chat.completions.create({ model: sim.arguments.modelName, messages: [{ role: "user", content: "count me" }] });
      const metrics = driver.parseMetrics(await (await fetch(`${sim.url}${launch.metricsPath}`)).text());
      if (driver.engine === "vllm" || driver.engine === "sglang" || driver.engine === "llamacpp") {
        expect(metrics.generationTokensTotal).toBe(answer.usage?.completion_tokens);
        expect(metrics.requestsRunning).toBe(0);
      }
      if (driver.engine === "trtllm") expect(metrics.kvCacheUsage).toBe(0);
      if (driver.engine === "comfyui") expect(metrics).toMatchObject({ requestsRunning: 0, requestsWaiting: 0 });
    });
  }
});

describe("faults", () => {
  it("answers 500 in OpenAI's shape with LLMGW_SIM_FAULT=error-500, and recovers when told", async () => {
    const { client, sim } = await startSim({}, { LLMGW_SIM_FAULT: "error-500" });
    await expect(client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(
      OpenAI.InternalServerError,
    );
    const cleared = await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "none" }) });
    expect(cleared.status).toBe(200);
    const answer = await client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] });
    expect(firstLine(answer.choices[0]?.message.content)).toBe("Simulated answer from qwen2.5-7b: x");
  });

  it("stalls on request: accepts inference and health requests and answers neither", async () => {
    const { client, sim, logLines } = await startSim();
    await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "stall" }) });
    const abort = new AbortController();
    const stalled = client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] }, { signal: abort.signal });
    await waitFor(() => logLines.some((line) => line.includes("stalled (fault stall)")), 10_000, "the request reaches the stalled engine", 25);
    abort.abort();
    await expect(stalled).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await expect(fetch(`${sim.url}/health`, { signal: AbortSignal.timeout(300) })).rejects.toThrow();
  });

  it("crashes with status 134 after N more requests, not before", async () => {
    const { client, sim, exitCodes } = await startSim();
    await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "crash-after:2" }) });
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "one" }] });
    expect(exitCodes).toEqual([]);
    const second = await client.chat.completions.create({ model, messages: [{ role: "user", content: "two" }] });
    expect(firstLine(second.choices[0]?.message.content)).toBe("Simulated answer from qwen2.5-7b: two");
    await waitFor(() => exitCodes.length > 0, 10_000, "the engine exits", 25);
    expect(exitCodes).toEqual([134]);
  });

  it("crashes at once on POST /sim/fault crash-now, after answering it", async () => {
    const { sim, exitCodes } = await startSim();
    const response = await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "crash-now" }) });
    expect(response.status).toBe(200);
    await waitFor(() => exitCodes.length > 0, 10_000, "the engine exits", 25);
    expect(exitCodes).toEqual([134]);
  });

  it("exits 134 at start with LLMGW_SIM_FAULT=crash-now, and 1 during load with fail-load after a log line", async () => {
    await expect(startSim({}, { LLMGW_SIM_FAULT: "crash-now" })).rejects.toEqual(new SimEngineExited(134));
    const lines: string[] = [];
    const codes: number[] = [];
    const launch = vllmDriver.build(testLaunchInput({ port: 0 }));
    await expect(
      startSimEngine({ engine: "vllm", argv: launch.argv.slice(1), environment: { LLMGW_SIM_FAULT: "fail-load" }, log: (line) => lines.push(line), exit: (code) => codes.push(code) }),
    ).rejects.toEqual(new SimEngineExited(1));
    expect(codes).toEqual([1]);
    expect(lines[0]).toMatch(/loading "qwen2.5-7b"/);
    expect(lines[1]).toMatch(/simulated failure while loading/);
  });

  it("refuses an unknown fault, from the environment and from the endpoint", async () => {
    await expect(startSim({}, { LLMGW_SIM_FAULT: "explode" })).rejects.toThrow(/LLMGW_SIM_FAULT/);
    const { sim } = await startSim();
    const response = await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "explode" }) });
    expect(response.status).toBe(400);
    const extraKey = await fetch(`${sim.url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "none", when: "now" }) });
    expect(extraKey.status).toBe(400);
  });
});

describe("a replica's API key, passed the way each engine takes it", () => {
  const key = "llmgw_replica_0123456789abcdefghij";
  for (const driver of engineDrivers.filter((candidate) => candidate.engine === "vllm" || candidate.engine === "sglang" || candidate.engine === "llamacpp")) {
    it(`${driver.engine}: refuses the OpenAI routes without the key, serves them with it, and keeps health open for the agent`, async () => {
      const launch = driver.build(testLaunchInput({ port: 0, cards: [0], apiKey: key }));
      // Where the engine reads it from an environment variable, it is not on the command line (`ps` shows that).
      if (driver.engine !== "sglang") expect(launch.argv.join(" ")).not.toContain(key);
      const sim = await startSimEngine({ engine: driver.engine, argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined, exit: () => undefined });
      running.push(sim);
      expect((await fetch(`${sim.url}${launch.healthPath}`)).status).toBe(200);
      expect((await fetch(`${sim.url}${launch.metricsPath}`)).status).toBe(200);
      expect((await fetch(`${sim.url}/sim/status`)).status).toBe(200);
      // Every path but those is guarded, not only /v1: a route added later is not left open by mistake.
      expect((await fetch(`${sim.url}/load_lora_adapter`, { method: "POST" })).status).toBe(401);
      const without = await new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "a-wrong-key", maxRetries: 0 }).models.list().catch((error: unknown) => error);
      expect((without as { status?: number }).status).toBe(401);
      expect((await fetch(`${sim.url}/v1/chat/completions`, { method: "POST" })).status).toBe(401);
      const answer = await new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: sim.arguments.modelName, messages: [{ role: "user", content: "hi" }] });
      expect(answer.choices[0]?.message.content?.split("\n\n")[0]).toBe(`Simulated answer from ${sim.arguments.modelName}: hi`);
    });
  }

  it("listens where --host says, so gateways on other machines can reach it", async () => {
    const launch = vllmDriver.build(testLaunchInput({ port: 0, host: "0.0.0.0" }));
    expect(launch.argv[launch.argv.indexOf("--host") + 1]).toBe("0.0.0.0");
    const lines: string[] = [];
    const sim = await startSimEngine({ engine: "vllm", argv: launch.argv.slice(1), environment: launch.env, log: (line) => lines.push(line), exit: () => undefined });
    running.push(sim);
    expect(lines.join("\n")).toContain("on http://0.0.0.0:");
  });
});

describe("what the real engines do, done by the simulated engine too", () => {
  it("answers n choices, each reproducible with the same seed, streamed side by side", async () => {
    const { client } = await startSim();
    const request = { model, messages: [{ role: "user" as const, content: "Describe a quiet harbour" }], n: 3, seed: 11, max_tokens: 60 };
    const first = await client.chat.completions.create(request);
    expect(first.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    expect(new Set(first.choices.map((choice) => choice.message.content)).size).toBe(3);
    const again = await client.chat.completions.create(request);
    expect(again.choices.map((choice) => choice.message.content)).toEqual(first.choices.map((choice) => choice.message.content));
    expect(first.usage?.completion_tokens).toBe(3 * 60);
    const streamed = ["", "", ""];
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      for (const choice of chunk.choices) streamed[choice.index] += choice.delta.content ?? "";
    }
    expect(streamed).toEqual(first.choices.map((choice) => choice.message.content));
  });

  it("returns the log probabilities of its tokens, the chosen one the likeliest, in chat and completions", async () => {
    const { client } = await startSim();
    const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "What is two and two?" }], logprobs: true, top_logprobs: 3, max_tokens: 8 });
    const entries = chat.choices[0]?.logprobs?.content ?? [];
    expect(entries.map((entry) => entry.token).join("")).toBe(chat.choices[0]?.message.content);
    for (const entry of entries) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]?.token).toBe(entry.token);
      expect(Math.max(...entry.top_logprobs.map((alternative) => alternative.logprob))).toBe(entry.logprob);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
    }
    const completion = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, logprobs: 2 });
    const legacy = completion.choices[0]?.logprobs;
    expect(legacy?.tokens?.join("")).toBe(completion.choices[0]?.text);
    expect(legacy?.token_logprobs).toHaveLength(5);
    expect(Object.keys(legacy?.top_logprobs?.[0] ?? {})).toHaveLength(2);
  });

  it("calls the named tool, or every tool offered with tool_choice required, with arguments that fit its parameters", async () => {
    const { client } = await startSim();
    const tools = [
      { type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
      {
        type: "function" as const,
        function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, unit: { enum: ["celsius", "fahrenheit"] }, days: { type: "integer", minimum: 1, maximum: 7 } }, required: ["city"] } },
      },
    ];
    const messages = [{ role: "user" as const, content: "Weather in Oslo?" }];
    const named = await client.chat.completions.create({ model, messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } } });
    const call = named.choices[0]?.message.tool_calls?.[0];
    expect(named.choices[0]?.finish_reason).toBe("tool_calls");
    expect(call?.type === "function" ? call.function.name : undefined).toBe("get_weather");
    const argumentsValue = JSON.parse(call?.type === "function" ? call.function.arguments : "") as { city: string; unit: string; days: number };
    expect(typeof argumentsValue.city).toBe("string");
    expect(["celsius", "fahrenheit"]).toContain(argumentsValue.unit);
    expect(argumentsValue.days).toBeGreaterThanOrEqual(1);
    expect(argumentsValue.days).toBeLessThanOrEqual(7);
    const required = await client.chat.completions.create({ model, messages, tools, tool_choice: "required" });
    const calls = (required.choices[0]?.message.tool_calls ?? []).map((each) => (each.type === "function" ? each.function : undefined));
    expect(calls.map((each) => each?.name)).toEqual(["get_time", "get_weather"]);
    // Streamed, the openai client's helper puts the calls together from their pieces.
    const stream = client.chat.completions.stream({ model, messages, tools, tool_choice: "required" });
    const final = await stream.finalChatCompletion();
    const streamed = (final.choices[0]?.message.tool_calls ?? []).map((each) => (each.type === "function" ? each.function : undefined));
    expect(streamed.map((each) => ({ name: each?.name, arguments: each?.arguments }))).toEqual(calls.map((each) => ({ name: each?.name, arguments: each?.arguments })));
    const unknown = await client.chat.completions.create({ model, messages, tools, tool_choice: { type: "function", function: { name: "nope" } } }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("tool_choice");
  });

  it("answers valid JSON for response_format json_object and json_schema, and refuses a schema it cannot follow", async () => {
    const { client } = await startSim();
    const messages = [{ role: "user" as const, content: "Describe a cat as JSON" }];
    const object = await client.chat.completions.create({ model, messages, response_format: { type: "json_object" } });
    expect(JSON.parse(object.choices[0]?.message.content ?? "")).toEqual({ answer: expect.stringContaining("Simulated answer from") });
    const schema = { type: "object", properties: { name: { type: "string" }, legs: { type: "integer", minimum: 4, maximum: 4 }, tags: { type: "array", items: { type: "string" } } }, required: ["name", "legs"] };
    const typed = await client.chat.completions.create({ model, messages, response_format: { type: "json_schema", json_schema: { name: "cat", schema } } });
    expect(JSON.parse(typed.choices[0]?.message.content ?? "")).toEqual({ name: expect.any(String), legs: 4, tags: [expect.any(String), expect.any(String)] });
    const refused = await client.chat.completions
      .create({ model, messages, response_format: { type: "json_schema", json_schema: { name: "cat", schema: { $ref: "#/definitions/cat" } } } })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("response_format");
    expect((refused as Error).message).toContain("$ref");
  });

  it("names the field that was wrong: max_tokens past the context is about max_tokens, a prompt past it about messages", async () => {
    const { client } = await startSim({ context: 64 });
    const tooLong = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 100 }).catch((error: unknown) => error);
    expect((tooLong as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("max_tokens");
    const bigPrompt = await client.chat.completions.create({ model, messages: [{ role: "user", content: "word ".repeat(100) }], max_tokens: 4 }).catch((error: unknown) => error);
    expect((bigPrompt as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages");
    const badN = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], n: 0 }).catch((error: unknown) => error);
    expect((badN as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("n");
  });
});
