import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { vllmDriver } from "../drivers/vllm.js";
import { startSimEngine, type SimEngineHandle } from "./sim-engine.js";

/**
 * What a real engine does that clients depend on, done by the simulated
 * engine over HTTP with the official openai client: parallel tool calls,
 * answering a tool's result, stop sequences, vLLM's parameter checks, and
 * json_object answers that follow the prompt's keys.
 */

const model = "qwen2.5-7b";
const running: SimEngineHandle[] = [];

async function startClient(): Promise<OpenAI> {
  const launch = vllmDriver.build(testLaunchInput({ port: 0, context: 4096 }));
  const sim = await startSimEngine({ engine: "vllm", argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined, exit: () => undefined });
  running.push(sim);
  return new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((sim) => sim.close()));
});

const tools = [
  { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
  { type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] } } },
];

async function refusal(request: Promise<unknown>): Promise<{ status: number | undefined; param: string | null | undefined; message: string }> {
  const error = await request.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const apiError = error as InstanceType<typeof OpenAI.APIError>;
  return { status: apiError.status, param: apiError.param, message: apiError.message };
}

describe("tool calls as a real engine makes them", () => {
  it("calls each tool the user names with tool_choice auto, in parallel, and answers in text when none is named", async () => {
    const client = await startClient();
    const both = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Use get_weather for Oslo and get time for its zone." }], tools });
    expect(both.choices[0]?.finish_reason).toBe("tool_calls");
    const names = both.choices[0]?.message.tool_calls?.map((call) => (call.type === "function" ? call.function.name : ""));
    expect(names).toEqual(["get_weather", "get_time"]);
    expect(new Set(both.choices[0]?.message.tool_calls?.map((call) => call.id)).size).toBe(2);
    const one = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Use get_weather and get_time." }], tools, parallel_tool_calls: false });
    expect(one.choices[0]?.message.tool_calls?.map((call) => (call.type === "function" ? call.function.name : ""))).toEqual(["get_weather"]);
    const none = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello." }], tools });
    expect(none.choices[0]?.finish_reason).toBe("stop");
    expect(none.choices[0]?.message.tool_calls ?? []).toEqual([]);
    expect(none.choices[0]?.message.content).toContain("Simulated answer");
  });

  it("calls only the first tool with tool_choice required when parallel_tool_calls is false", async () => {
    const client = await startClient();
    const answer = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Go." }], tools, tool_choice: "required", parallel_tool_calls: false });
    expect(answer.choices[0]?.message.tool_calls?.map((call) => (call.type === "function" ? call.function.name : ""))).toEqual(["get_weather"]);
  });

  it("streams parallel calls in the Responses API as one function_call item each", async () => {
    const client = await startClient();
    const whole = await client.responses.create({ model, input: "Look it up.", tools: tools.map((tool) => ({ type: "function" as const, name: tool.function.name, parameters: tool.function.parameters, strict: false })), tool_choice: "required" });
    const calls = whole.output.flatMap((item) => (item.type === "function_call" ? [item] : []));
    expect(calls.map((call) => call.name)).toEqual(["get_weather", "get_time"]);
    expect(calls.map((call) => Object.keys(JSON.parse(call.arguments) as object))).toEqual([["city"], ["zone"]]);
    const stream = client.responses.stream({ model, input: "Look it up.", tools: tools.map((tool) => ({ type: "function" as const, name: tool.function.name, parameters: tool.function.parameters, strict: false })), tool_choice: "required" });
    const final = await stream.finalResponse();
    expect(final.output.map((item) => (item.type === "function_call" ? [item.name, item.arguments] : []))).toEqual(calls.map((call) => [call.name, call.arguments]));
  });

  it("answers a tool's result in text that refers to it, in chat and as a Responses function_call_output", async () => {
    const client = await startClient();
    const asked = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Use get_weather for Oslo." }], tools });
    const call = asked.choices[0]?.message.tool_calls?.[0];
    expect(call).toBeDefined();
    const answered = await client.chat.completions.create({
      model,
      tools,
      messages: [
        { role: "user", content: "Use get_weather for Oslo." },
        { role: "assistant", content: null, tool_calls: asked.choices[0]?.message.tool_calls ?? [] },
        { role: "tool", tool_call_id: call?.id ?? "", content: '{"temperature": 21}' },
      ],
    });
    expect(answered.choices[0]?.finish_reason).toBe("stop");
    expect(answered.choices[0]?.message.content?.split("\n\n")[0]).toBe(`Simulated answer from ${model}: the get_weather tool returned {"temperature": 21}`);
    const responsesTools = [{ type: "function" as const, name: "get_weather", parameters: tools[0]?.function.parameters ?? {}, strict: false }];
    const response = await client.responses.create({
      model,
      tools: responsesTools,
      input: [
        { role: "user", content: "Use get_weather for Oslo." },
        { type: "function_call", call_id: "call-1", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call_output", call_id: "call-1", output: "rain, 8 degrees" },
      ],
    });
    expect(response.output_text.split("\n\n")[0]).toBe(`Simulated answer from ${model}: the get_weather tool returned rain, 8 degrees`);
  });
});

describe("stop sequences", () => {
  it("ends the answer before the first stop sequence, string or list, streamed or not, with finish reason stop", async () => {
    const client = await startClient();
    const messages = [{ role: "user" as const, content: "Count apples, pears and plums for me please" }];
    const full = await client.chat.completions.create({ model, messages, seed: 3 });
    expect(full.choices[0]?.message.content).toContain("pears");
    const cut = await client.chat.completions.create({ model, messages, seed: 3, stop: " pears" });
    expect(cut.choices[0]?.message.content).toBe(`Simulated answer from ${model}: Count apples,`);
    expect(cut.choices[0]?.finish_reason).toBe("stop");
    const listed = await client.chat.completions.create({ model, messages, seed: 3, stop: ["plums", "\n\n", " apples"] });
    expect(listed.choices[0]?.message.content).toBe(`Simulated answer from ${model}: Count`);
    const stream = await client.chat.completions.create({ model, messages, seed: 3, stop: [" pears"], stream: true });
    let streamed = "";
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect([streamed, finish]).toEqual([`Simulated answer from ${model}: Count apples,`, "stop"]);
    const legacy = await client.completions.create({ model, prompt: "one two three four", max_tokens: 10, stop: " three" });
    expect([legacy.choices[0]?.text, legacy.choices[0]?.finish_reason]).toEqual([`Simulated answer from ${model}: one two`, "stop"]);
  });
});

describe("the request checks vLLM makes, in OpenAI's error shape", () => {
  it("refuses a string temperature with 400 naming temperature", async () => {
    const client = await startClient();
    // As a client that does not check types sends it.
    const refused = await refusal(client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], temperature: "hot" as unknown as number }));
    expect(refused).toMatchObject({ status: 400, param: "temperature" });
  });

  it.each([
    [{ temperature: 2.5 }, "temperature", "temperature must be in [0, 2], got 2.5."],
    [{ temperature: -1 }, "temperature", "temperature must be non-negative, got -1."],
    [{ top_p: 0 }, "top_p", "top_p must be in (0, 1], got 0."],
    [{ presence_penalty: 2.5 }, "presence_penalty", "presence_penalty must be in [-2, 2], got 2.5."],
    [{ frequency_penalty: -3 }, "frequency_penalty", "frequency_penalty must be in [-2, 2], got -3."],
    [{ stop: ["", "x"] }, "stop", "stop cannot contain an empty string."],
    [{ top_logprobs: 2 }, "top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true."],
    [{ n: 2, temperature: 0 }, "n", "n must be 1 when using greedy sampling, got 2."],
    [{ max_tokens: 0 }, "max_tokens", "max_tokens"],
    [{ logprobs: true, top_logprobs: 21 }, "top_logprobs", "top_logprobs"],
  ])("refuses %j with 400 naming %s, in vLLM's words", async (fields, param, message) => {
    const client = await startClient();
    const refused = await refusal(client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], ...fields }));
    expect(refused.status).toBe(400);
    expect(refused.param).toBe(param);
    expect(refused.message).toContain(message);
  });

  it("checks the legacy completions API and the Responses API the same way", async () => {
    const client = await startClient();
    expect(await refusal(client.completions.create({ model, prompt: "hi", top_p: 1.5 }))).toMatchObject({ status: 400, param: "top_p" });
    expect(await refusal(client.responses.create({ model, input: "hi", temperature: 3 }))).toMatchObject({ status: 400, param: "temperature" });
  });
});

describe("json_object answers", () => {
  it("follows the keys the instructions list, or the JSON example they show, else answers {answer}", async () => {
    const client = await startClient();
    const listed = await client.chat.completions.create({
      model,
      response_format: { type: "json_object" },
      messages: [
        { role: "system", content: "Reply in JSON with keys: name, age and city" },
        { role: "user", content: "Who is the user?" },
      ],
    });
    expect(Object.keys(JSON.parse(listed.choices[0]?.message.content ?? "") as object)).toEqual(["name", "age", "city"]);
    const example = await client.chat.completions.create({
      model,
      response_format: { type: "json_object" },
      messages: [{ role: "user", content: 'Describe a cat in JSON like {"name": "Tom", "legs": 4, "indoor": true, "toys": ["ball"]}' }],
    });
    const cat = JSON.parse(example.choices[0]?.message.content ?? "") as Record<string, unknown>;
    expect(cat).toEqual({ name: expect.any(String), legs: expect.any(Number), indoor: expect.any(Boolean), toys: expect.arrayContaining([expect.any(String)]) });
    expect(Number.isInteger(cat.legs)).toBe(true);
    const plain = await client.responses.create({ model, input: "Describe a cat", text: { format: { type: "json_object" } } });
    expect(JSON.parse(plain.output_text)).toEqual({ answer: expect.stringContaining("Simulated answer") });
  });
});
