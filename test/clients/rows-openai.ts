import OpenAI from "openai";
import { zodResponseFormat as zodResponseFormat6 } from "openai/helpers/zod";
import OpenAI7 from "openai7";
import { zodResponseFormat as zodResponseFormat7 } from "openai7/helpers/zod";
import { expect } from "vitest";
import { z } from "zod";
import { person, timeArguments, timeParameters, weatherArguments, weatherParameters } from "./battery-schemas.js";
import { failureOf, refusalOf, stopFrom, weatherPrompt, type BatteryRow, type BatteryTarget } from "./battery.js";

/** The openai client for Node, 6.49 and 7.55: the same calls, each through its own package. */

const weatherTool = {
  type: "function" as const,
  function: { name: "get_weather", description: "The weather in a city", parameters: weatherParameters },
};
const timeTool = {
  type: "function" as const,
  function: { name: "get_time", description: "The time in a zone", parameters: timeParameters },
};
const user = (content: string) => [{ role: "user" as const, content }];

type ZodResponseFormat = typeof zodResponseFormat6;

function functionCalls(message: OpenAI.ChatCompletionMessage): { name: string; arguments: string; id: string }[] {
  return (message.tool_calls ?? []).flatMap((call) => (call.type === "function" ? [{ name: call.function.name, arguments: call.function.arguments, id: call.id }] : []));
}

const argumentsOf: Record<string, z.ZodType> = { get_weather: weatherArguments, get_time: timeArguments };

/** The call of `name` in the answer, whose arguments parse and match the tool's schema. */
function expectCallOf(message: OpenAI.ChatCompletionMessage, name: string): { name: string; arguments: string; id: string } {
  const call = functionCalls(message).find((each) => each.name === name);
  const calls = functionCalls(message).map((each) => each.name);
  expect(call, `a call of ${name}, where the answer had ${calls.length > 0 ? `calls of ${calls.join(", ")}` : `no call but ${message.content?.length ?? 0} characters of text`}`).toBeDefined();
  const schema = argumentsOf[name];
  if (schema === undefined) throw new Error(`no argument schema for ${name}`);
  schema.parse(JSON.parse(call?.arguments ?? ""));
  return call as { name: string; arguments: string; id: string };
}

function openaiRows(client: string, connect: (target: BatteryTarget, apiKey?: string) => OpenAI, zodResponseFormat: ZodResponseFormat): BatteryRow[] {
  const row = (feature: string, run: (openai: OpenAI, target: BatteryTarget) => Promise<void>): BatteryRow => ({ client, feature, run: (target) => run(connect(target), target) });
  return [
    row("chat", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({ model: chatModel, messages: user("Say hello."), max_tokens: 16 });
      expect(answer.choices[0]?.message.content).toEqual(expect.any(String));
      expect(["stop", "length"]).toContain(answer.choices[0]?.finish_reason);
      expect(answer.usage?.prompt_tokens).toBeGreaterThan(0);
    }),
    row("stream with usage", async (openai, { chatModel }) => {
      const stream = await openai.chat.completions.create({ model: chatModel, messages: user("Say hello."), max_tokens: 16, stream: true, stream_options: { include_usage: true } });
      let text = "";
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? "";
        usage = chunk.usage ?? usage;
      }
      expect(text.length).toBeGreaterThan(0);
      expect(usage?.completion_tokens).toBeGreaterThan(0);
    }),
    row("tools: required", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({ model: chatModel, messages: user(weatherPrompt), tools: [weatherTool], tool_choice: "required", max_tokens: 200 });
      expectCallOf(answer.choices[0]?.message as OpenAI.ChatCompletionMessage, "get_weather");
      expect(answer.choices[0]?.finish_reason).toBe("tool_calls");
    }),
    row("tools: named", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({
        model: chatModel,
        messages: user("What time is it in Oslo?"),
        tools: [weatherTool, timeTool],
        tool_choice: { type: "function", function: { name: "get_time" } },
        max_tokens: 200,
      });
      const message = answer.choices[0]?.message as OpenAI.ChatCompletionMessage;
      expectCallOf(message, "get_time");
      expect(functionCalls(message).map((call) => call.name)).toEqual(["get_time"]);
    }),
    row("tools: auto", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({ model: chatModel, messages: user(weatherPrompt), tools: [weatherTool, timeTool], tool_choice: "auto", max_tokens: 200 });
      const choice = answer.choices[0];
      // The model decides: a call of a tool offered, with whole arguments, or text.
      if (choice?.finish_reason === "tool_calls") for (const call of functionCalls(choice.message)) expect(["get_weather", "get_time"]).toContain(expectCallOf(choice.message, call.name).name);
      else expect(choice?.message.content).toEqual(expect.any(String));
    }),
    row("tools: round trip", async (openai, { chatModel }) => {
      const messages: OpenAI.ChatCompletionMessageParam[] = user(weatherPrompt);
      const asked = await openai.chat.completions.create({ model: chatModel, messages, tools: [weatherTool], tool_choice: "required", max_tokens: 200 });
      const message = asked.choices[0]?.message as OpenAI.ChatCompletionMessage;
      const call = expectCallOf(message, "get_weather");
      messages.push(message, { role: "tool", tool_call_id: call.id, content: '{"temperature": 21, "sky": "clear"}' });
      const answered = await openai.chat.completions.create({ model: chatModel, messages, tools: [weatherTool], max_tokens: 32 });
      expect(answered.choices[0]?.message.content ?? functionCalls(answered.choices[0]?.message as OpenAI.ChatCompletionMessage)).toBeTruthy();
    }),
    row("structured: strict json_schema (parse)", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.parse({ model: chatModel, messages: user("Invent a person."), response_format: zodResponseFormat(person, "person"), max_tokens: 200 });
      expect(person.parse(answer.choices[0]?.message.parsed)).toEqual(answer.choices[0]?.message.parsed);
    }),
    row("structured: json_object", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({
        model: chatModel,
        messages: [{ role: "system", content: "Reply in JSON with keys: name, age" }, ...user("Invent a person.")],
        response_format: { type: "json_object" },
        max_tokens: 200,
      });
      expect(JSON.parse(answer.choices[0]?.message.content ?? "")).toBeTypeOf("object");
    }),
    row("n", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({ model: chatModel, messages: user("Say hello."), n: 2, max_tokens: 8 });
      expect(answer.choices.map((choice) => choice.index)).toEqual([0, 1]);
    }),
    row("logprobs", async (openai, { chatModel }) => {
      const answer = await openai.chat.completions.create({ model: chatModel, messages: user("Say hello."), logprobs: true, top_logprobs: 2, max_tokens: 8 });
      const content = answer.choices[0]?.logprobs?.content ?? [];
      expect(content.length).toBeGreaterThan(0);
      for (const entry of content) {
        expect(entry.logprob).toBeLessThanOrEqual(0);
        expect(entry.top_logprobs).toHaveLength(2);
      }
    }),
    row("stop", async (openai, { chatModel }) => {
      const ask = (stop?: string[]) => openai.chat.completions.create({ model: chatModel, messages: user("Count to ten."), max_tokens: 24, temperature: 0, seed: 1, ...(stop ? { stop } : {}) });
      const { stop, before } = stopFrom((await ask()).choices[0]?.message.content ?? "");
      const cut = await ask([stop]);
      expect([cut.choices[0]?.message.content, cut.choices[0]?.finish_reason]).toEqual([before, "stop"]);
    }),
    row("seed", async (openai, { chatModel }) => {
      const ask = () => openai.chat.completions.create({ model: chatModel, messages: user("Tell me a story."), max_tokens: 16, temperature: 0.9, seed: 42 });
      const [first, second] = [await ask(), await ask()];
      expect(second.choices[0]?.message.content).toBe(first.choices[0]?.message.content);
    }),
    row("embeddings", async (openai, { embeddingModel }) => {
      const answer = await openai.embeddings.create({ model: embeddingModel, input: ["one apple", "two pears"] });
      expect(answer.data).toHaveLength(2);
      expect(answer.data[0]?.embedding.length).toBeGreaterThan(0);
      expect(answer.data[1]?.embedding).toHaveLength(answer.data[0]?.embedding.length ?? -1);
    }),
    row("responses: create", async (openai, { chatModel }) => {
      const response = await openai.responses.create({ model: chatModel, input: "Say hello.", max_output_tokens: 16 });
      expect(response.output_text.length).toBeGreaterThan(0);
      expect(response.usage?.output_tokens).toBeGreaterThan(0);
    }),
    row("responses: stream", async (openai, { chatModel }) => {
      const stream = openai.responses.stream({ model: chatModel, input: "Say hello.", max_output_tokens: 16 });
      let deltas = "";
      stream.on("response.output_text.delta", (event) => (deltas += event.delta));
      const final = await stream.finalResponse();
      expect(final.output_text).toBe(deltas);
      expect(deltas.length).toBeGreaterThan(0);
    }),
    row("responses: tools", async (openai, { chatModel }) => {
      const tool = { type: "function" as const, name: "get_weather", parameters: weatherTool.function.parameters, strict: true };
      const response = await openai.responses.create({ model: chatModel, input: weatherPrompt, tools: [tool], tool_choice: "required", max_output_tokens: 200 });
      const call = response.output.find((item) => item.type === "function_call");
      expect(call?.type === "function_call" ? call.name : undefined).toBe("get_weather");
      weatherArguments.parse(JSON.parse(call?.type === "function_call" ? call.arguments : ""));
    }),
    row("models.retrieve", async (openai, { chatModel }) => {
      const model = await openai.models.retrieve(chatModel);
      expect([model.id, model.object]).toEqual([chatModel, "model"]);
    }),
    row("error: unknown model", async (openai) => {
      const error = await failureOf(openai.chat.completions.create({ model: "no-such-model", messages: user("hi") }));
      expect((error as Error).constructor.name).toBe("NotFoundError");
      expect(refusalOf(error)?.status).toBe(404);
      expect((error as { error?: { message?: unknown } }).error?.message).toEqual(expect.stringContaining("no-such-model"));
    }),
    row("error: string temperature", async (openai, { chatModel }) => {
      // As a caller that does not check types sends it: the engine refuses it as vLLM does, naming the field.
      const error = await failureOf(openai.chat.completions.create({ model: chatModel, messages: user("hi"), temperature: "hot" as unknown as number }));
      expect((error as Error).constructor.name).toBe("BadRequestError");
      expect(refusalOf(error), (error as Error).message).toMatchObject({ status: 400, param: "temperature" });
    }),
    {
      client,
      feature: "error: bad key",
      run: async (target) => {
        const error = await failureOf(connect(target, "llmgw_key_not-a-key").chat.completions.create({ model: target.chatModel, messages: user("hi") }));
        expect((error as Error).constructor.name).toBe("AuthenticationError");
        expect(refusalOf(error)?.status).toBe(401);
        expect((error as { error?: { message?: unknown } }).error?.message).toEqual(expect.any(String));
      },
    },
  ];
}

export const openai6Rows = openaiRows("openai 6.49", (target, apiKey) => new OpenAI({ baseURL: `${target.url}/v1`, apiKey: apiKey ?? target.key, maxRetries: 0, timeout: 60_000 }), zodResponseFormat6);

// The 7 client's surface used here is the 6 client's, call for call: typed as 6 so one set of rows runs both, unchanged.
export const openai7Rows = openaiRows(
  "openai 7.55",
  (target, apiKey) => new OpenAI7({ baseURL: `${target.url}/v1`, apiKey: apiKey ?? target.key, maxRetries: 0, timeout: 60_000 }) as unknown as OpenAI,
  zodResponseFormat7 as unknown as ZodResponseFormat,
);
