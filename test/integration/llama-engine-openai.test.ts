import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLlamaEngine, type LlamaEngineHandle } from "../../src/engines/llama/llama-engine.js";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";

/**
 * The built-in engine on the tiny random-weights GGUF, through the official
 * `openai` client: the grammar makes tool calls and JSON right whatever the
 * weights say, and the slot cache carries a conversation's turns.
 */
describe("the built-in llama.cpp engine through the official openai client", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-llama-openai-"));
  let engine: LlamaEngineHandle;
  let client: OpenAI;
  let endOfTurn: number;
  const cities = ["Oslo", "Lima", "Pune"];
  const weather = {
    type: "function" as const,
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: { type: "object", properties: { city: { type: "string", enum: cities }, celsius: { type: "boolean" } }, required: ["city", "celsius"], additionalProperties: false },
    },
  };
  const clock = { type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: { utc: { type: "boolean" } }, required: ["utc"], additionalProperties: false } } };
  const user = [{ role: "user" as const, content: "What is the weather in Oslo?" }];

  /** Arguments as the weather function's schema says: a city of the list and a boolean, nothing else. */
  const expectWeatherArguments = (text: string) => {
    const args = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(args).sort()).toEqual(["celsius", "city"]);
    expect(cities).toContain(args.city);
    expect(typeof args.celsius).toBe("boolean");
  };

  beforeAll(async () => {
    const model = await writeGgufFile(path.join(directory, "tiny.gguf"), tinyModelGguf());
    engine = await startLlamaEngine({
      argv: ["--model", model, "--port", "0", "--alias", "tiny", "--ctx-size", "4096", "--parallel", "2", "--threads", "1", "--metrics"],
      environment: { LLMGW_LLAMA_QUEUE: "8" },
      log: () => undefined,
    });
    await engine.loaded;
    client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const listed = (await (await fetch(`${engine.url}/v1/models`)).json()) as { data: { meta: { n_vocab: number } }[] };
    // The tiny vocabulary ends with ChatML's <|im_end|>, the model's end of turn.
    endOfTurn = (listed.data[0]?.meta.n_vocab ?? 0) - 1;
  }, 180_000);

  afterAll(async () => {
    await engine?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("calls the one tool required, with arguments that match its schema", async () => {
    const answer = await client.chat.completions.create({ model: "tiny", messages: user, tools: [weather], tool_choice: "required", parallel_tool_calls: false, max_tokens: 200 });
    const choice = answer.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.tool_calls).toHaveLength(1);
    const call = choice?.message.tool_calls?.[0];
    expect(call).toMatchObject({ id: expect.stringMatching(/^call_/), type: "function", function: { name: "get_weather" } });
    expectWeatherArguments(call?.type === "function" ? call.function.arguments : "");
  });

  it("calls a named function among several, streamed in OpenAI's delta shape", async () => {
    const stream = await client.chat.completions.create({
      model: "tiny",
      messages: user,
      tools: [clock, weather],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 200,
      stream: true,
    });
    const deltas = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) deltas.push(call);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(deltas[0]).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/), type: "function", function: { name: "get_weather" } });
    expect(deltas.slice(1).every((delta) => delta.id === undefined && delta.function?.name === undefined)).toBe(true);
    expectWeatherArguments(deltas.map((delta) => delta.function?.arguments ?? "").join(""));
    expect(finish).toBe("tool_calls");
  });

  it("lets the model answer text or a valid call when tool_choice is auto", async () => {
    const answer = await client.chat.completions.create({ model: "tiny", messages: user, tools: [weather], max_tokens: 16 });
    const choice = answer.choices[0];
    if (choice?.message.tool_calls?.length) {
      expect(choice.finish_reason).toBe("tool_calls");
      for (const call of choice.message.tool_calls) expectWeatherArguments(call.type === "function" ? call.function.arguments : "");
    } else {
      expect(typeof choice?.message.content).toBe("string");
      expect(choice?.finish_reason).toBe("length");
    }
  });

  it("takes a tool's result in the next turn and answers it", async () => {
    const first = await client.chat.completions.create({ model: "tiny", messages: user, tools: [weather], tool_choice: "required", parallel_tool_calls: false, max_tokens: 200 });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(call?.type).toBe("function");
    const answer = await client.chat.completions.create({
      model: "tiny",
      messages: [...user, first.choices[0]?.message as OpenAI.ChatCompletionMessageParam, { role: "tool", tool_call_id: call?.id ?? "", content: '{"temperature": 21}' }],
      tools: [weather],
      tool_choice: "none",
      max_tokens: 4,
    });
    expect(answer.choices[0]?.message.content).toEqual(expect.any(String));
    expect(answer.usage?.prompt_tokens).toBeGreaterThan(first.usage?.prompt_tokens ?? 0);
  });

  it("answers JSON that matches a strict json_schema", async () => {
    const answer = await client.chat.completions.create({
      model: "tiny",
      messages: user,
      max_tokens: 200,
      response_format: {
        type: "json_schema",
        json_schema: { name: "report", strict: true, schema: { type: "object", properties: { city: { type: "string", enum: cities }, sunny: { type: "boolean" } }, required: ["city", "sunny"], additionalProperties: false } },
      },
    });
    expect(answer.choices[0]?.finish_reason).toBe("stop");
    const report = JSON.parse(answer.choices[0]?.message.content ?? "") as Record<string, unknown>;
    expect(Object.keys(report).sort()).toEqual(["city", "sunny"]);
    expect(cities).toContain(report.city);
    expect(typeof report.sunny).toBe("boolean");
  });

  it("answers JSON for json_object", async () => {
    const answer = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 300, response_format: { type: "json_object" } });
    expect(answer.choices[0]?.finish_reason).toBe("stop");
    expect(() => JSON.parse(answer.choices[0]?.message.content ?? "")).not.toThrow();
  });

  it("refuses a schema its grammar cannot enforce, naming response_format", async () => {
    const refused = await client.chat.completions
      .create({ model: "tiny", messages: user, response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]+$" } } } } } })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("response_format");
    expect((refused as Error).message).toContain('uses "pattern"');
  });

  it("gives n choices, each under its own index, whole and streamed", async () => {
    const answer = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 3, n: 2 });
    expect(answer.choices.map((choice) => choice.index)).toEqual([0, 1]);
    expect(answer.usage?.completion_tokens).toBe(6);
    const stream = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 3, n: 2, stream: true });
    const texts = ["", ""];
    const finishes: (string | null)[] = [null, null];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta.content ?? "";
        finishes[choice.index] = choice.finish_reason ?? finishes[choice.index] ?? null;
      }
    }
    expect(texts.every((text) => text.length > 0)).toBe(true);
    expect(finishes).toEqual(["length", "length"]);
  });

  it("reports each token's log-probability and its likeliest alternatives", async () => {
    const answer = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 4, logprobs: true, top_logprobs: 3 });
    const content = answer.choices[0]?.logprobs?.content ?? [];
    expect(content).toHaveLength(4);
    expect(content.map((entry) => entry.token).join("")).toBe(answer.choices[0]?.message.content);
    for (const entry of content) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, "utf8")]);
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]?.logprob).toBeGreaterThanOrEqual(entry.top_logprobs[2]?.logprob ?? 0);
    }
    const legacy = await client.completions.create({ model: "tiny", prompt: "one two", max_tokens: 3, logprobs: 2 });
    const lists = legacy.choices[0]?.logprobs;
    expect(lists?.tokens).toHaveLength(3);
    expect(lists?.token_logprobs).toHaveLength(3);
    expect(lists?.top_logprobs?.every((top) => Object.keys(top).length === 2)).toBe(true);
    expect(lists?.text_offset?.[0]).toBe(0);
  });

  it("says stop when the model ends its answer and length when max_tokens does", async () => {
    const ended = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 8, logit_bias: { [String(endOfTurn)]: 100 } });
    expect(ended.choices[0]?.finish_reason).toBe("stop");
    expect(ended.usage?.completion_tokens).toBe(0);
    const stream = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 8, logit_bias: { [String(endOfTurn)]: 100 }, stream: true });
    let finish: string | null = null;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    expect(finish).toBe("stop");
    const endless = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 3, logit_bias: { [String(endOfTurn)]: 100 }, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(endless.choices[0]?.finish_reason).toBe("length");
    expect(endless.usage?.completion_tokens).toBe(3);
    const cut = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 5 });
    expect(cut.choices[0]?.finish_reason).toBe("length");
    expect(cut.usage?.completion_tokens).toBe(5);
  });

  it("sends a streamed answer's last bytes even when they end inside a character", async () => {
    // 0xC3 is the first byte of a two-byte character; alone it is all the answer has.
    const whole = await client.completions.create({ model: "tiny", prompt: "x", max_tokens: 1, logit_bias: { "195": 100 } });
    const stream = await client.completions.create({ model: "tiny", prompt: "x", max_tokens: 1, logit_bias: { "195": 100 }, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    expect(whole.choices[0]?.text).toBe("\uFFFD");
    expect(text).toBe("\uFFFD");
  });

  it("reuses the cached prefix on a conversation's second turn, and not with cache_prompt false", async () => {
    const conversation = (tag: string) => [{ role: "user" as const, content: `Tell me a story about ${tag}.` }];
    const first = await client.chat.completions.create({ model: "tiny", messages: conversation("owls"), max_tokens: 6, temperature: 0 });
    const second = await client.chat.completions.create({
      model: "tiny",
      messages: [...conversation("owls"), { role: "assistant", content: first.choices[0]?.message.content ?? "" }, { role: "user", content: "And then?" }],
      max_tokens: 4,
    });
    expect(second.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThanOrEqual(first.usage?.prompt_tokens ?? 1);
    const timings = (second as unknown as { timings: { cache_n: number; prompt_n: number } }).timings;
    expect(timings.cache_n).toBe(second.usage?.prompt_tokens_details?.cached_tokens);
    expect(timings.prompt_n + timings.cache_n).toBe(second.usage?.prompt_tokens);

    const uncached = { cache_prompt: false } as Record<string, unknown>;
    await client.chat.completions.create({ model: "tiny", messages: conversation("foxes"), max_tokens: 4, ...uncached });
    const again = await client.chat.completions.create({ model: "tiny", messages: [...conversation("foxes"), { role: "user", content: "More." }], max_tokens: 4, ...uncached });
    expect(again.usage?.prompt_tokens_details?.cached_tokens).toBe(0);

    const metrics = await (await fetch(`${engine.url}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
    expect(value("llamacpp:prompt_tokens_cached_total")).toBeGreaterThanOrEqual(second.usage?.prompt_tokens_details?.cached_tokens ?? 1);
    expect(value("llamacpp:prompt_tokens_evaluated_total")).toBeGreaterThan(0);
    expect(value("llamacpp:kv_cache_usage_ratio")).toBeGreaterThan(0);
    expect(value("llamacpp:kv_cache_usage_ratio")).toBeLessThanOrEqual(1);
  });

  it("gives the same greedy text from a cached prompt as from one read afresh", async () => {
    const ask = async (cachePrompt: boolean) =>
      (await client.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "one two three" }], max_tokens: 12, temperature: 0, cache_prompt: cachePrompt } as OpenAI.ChatCompletionCreateParamsNonStreaming));
    const fresh = await ask(false);
    const cached = await ask(true);
    expect(cached.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    expect(cached.choices[0]?.message.content).toBe(fresh.choices[0]?.message.content);
  });

  it("refuses what it cannot honour by the parameter's name", async () => {
    const refused = (await client.chat.completions.create({ model: "tiny", messages: user, modalities: ["text", "audio"] }).catch((error: unknown) => error)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(refused.status).toBe(400);
    expect(refused.param).toBe("modalities");
    const image = (await client.chat.completions
      .create({ model: "tiny", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA==" } }] }] })
      .catch((error: unknown) => error)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(image.param).toBe("messages[0].content[0]");
  });
});
