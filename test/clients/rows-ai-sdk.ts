import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { embedMany, generateObject, generateText, Output, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import { expect } from "vitest";
import { person, timeArguments, weatherArguments } from "./battery-schemas.js";
import { failureOf, refusalOf, stopFrom, weatherPrompt, type BatteryRow, type BatteryTarget } from "./battery.js";

/**
 * The AI SDK 7: `@ai-sdk/openai` 4 with its chat model (`.chat()`, chat
 * completions) and its default model (the Responses API), and
 * `@ai-sdk/openai-compatible` 3 (chat completions, as most providers that
 * are not OpenAI are reached).
 */

const weather = tool({ description: "The weather in a city", inputSchema: weatherArguments });
const time = tool({ description: "The time in a zone", inputSchema: timeArguments });

type ModelFor = (target: BatteryTarget, model: string, apiKey?: string) => LanguageModel;

const openaiChat: ModelFor = (target, model, apiKey) => createOpenAI({ baseURL: `${target.url}/v1`, apiKey: apiKey ?? target.key }).chat(model);
const openaiResponses: ModelFor = (target, model, apiKey) => createOpenAI({ baseURL: `${target.url}/v1`, apiKey: apiKey ?? target.key })(model);
// supportsStructuredOutputs: llmgw's engines take json_schema, so Output.object sends the schema rather than json_object with none.
const compatible = (target: BatteryTarget, apiKey?: string) =>
  createOpenAICompatible({ name: "llmgw", baseURL: `${target.url}/v1`, apiKey: apiKey ?? target.key, includeUsage: true, supportsStructuredOutputs: true });
const compatibleChat: ModelFor = (target, model, apiKey) => compatible(target, apiKey).chatModel(model);

/** The rows every AI SDK model runs, whichever API it speaks; `skip` names those its API has no parameter for. */
function languageRows(client: string, modelFor: ModelFor, skip: readonly string[] = []): BatteryRow[] {
  const row = (feature: string, run: (model: LanguageModel, target: BatteryTarget) => Promise<void>): BatteryRow => ({ client, feature, run: (target) => run(modelFor(target, target.chatModel), target) });
  return [
    row("chat", async (model) => {
      const result = await generateText({ model, prompt: "Say hello.", maxOutputTokens: 16, maxRetries: 0 });
      expect(result.text.length).toBeGreaterThan(0);
      expect(["stop", "length"]).toContain(result.finishReason);
      expect(result.usage.inputTokens).toBeGreaterThan(0);
    }),
    row("stream with usage", async (model) => {
      const result = streamText({ model, prompt: "Say hello.", maxOutputTokens: 16, maxRetries: 0 });
      let text = "";
      // The full stream, not textStream: an error the SDK puts in the stream fails the row with its own words.
      for await (const part of result.fullStream) {
        if (part.type === "error") throw part.error;
        if (part.type === "text-delta") text += part.text;
      }
      expect(text.length).toBeGreaterThan(0);
      expect((await result.usage).outputTokens).toBeGreaterThan(0);
    }),
    row("tools: required", async (model) => {
      const result = await generateText({ model, prompt: weatherPrompt, tools: { get_weather: weather }, toolChoice: "required", maxOutputTokens: 200, maxRetries: 0 });
      expect(result.toolCalls.map((call) => call.toolName)).toContain("get_weather");
      expect(result.finishReason).toBe("tool-calls");
    }),
    row("tools: named", async (model) => {
      const result = await generateText({ model, prompt: "What time is it in Oslo?", tools: { get_weather: weather, get_time: time }, toolChoice: { type: "tool", toolName: "get_time" }, maxOutputTokens: 200, maxRetries: 0 });
      expect(result.toolCalls.map((call) => call.toolName)).toEqual(["get_time"]);
    }),
    row("tools: auto", async (model) => {
      const result = await generateText({ model, prompt: weatherPrompt, tools: { get_weather: weather, get_time: time }, toolChoice: "auto", maxOutputTokens: 200, maxRetries: 0 });
      // The model decides: calls of the tools offered (the SDK has checked their arguments against the schemas), or text.
      if (result.finishReason === "tool-calls") expect(result.toolCalls.length).toBeGreaterThan(0);
      else expect(result.text).toEqual(expect.any(String));
    }),
    row("tools: round trip", async (model) => {
      const executed = tool({ description: "The weather in a city", inputSchema: weatherArguments, execute: async () => ({ temperature: 21, sky: "clear" }) });
      const result = await generateText({
        model,
        prompt: weatherPrompt,
        tools: { get_weather: executed },
        // The first step must call the tool; the second answers its result.
        prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? "required" : "auto" }),
        stopWhen: stepCountIs(2),
        maxOutputTokens: 200,
        maxRetries: 0,
      });
      expect(result.steps[0]?.toolResults.map((each) => each.toolName)).toContain("get_weather");
      expect(result.steps).toHaveLength(2);
    }),
    row("structured: Output.object", async (model) => {
      const result = await generateText({ model, prompt: "Invent a person.", output: Output.object({ schema: person }), maxOutputTokens: 200, maxRetries: 0 });
      expect(person.parse(result.output)).toEqual(result.output);
    }),
    row("structured: generateObject", async (model) => {
      const result = await generateObject({ model, prompt: "Invent a person.", schema: person, maxOutputTokens: 200, maxRetries: 0 });
      expect(person.parse(result.object)).toEqual(result.object);
    }),
    row("stop", async (model) => {
      const ask = (stopSequences?: string[]) => generateText({ model, prompt: "Count to ten.", maxOutputTokens: 24, temperature: 0, seed: 1, maxRetries: 0, ...(stopSequences ? { stopSequences } : {}) });
      const { stop, before } = stopFrom((await ask()).text);
      const cut = await ask([stop]);
      expect([cut.text, cut.finishReason]).toEqual([before, "stop"]);
    }),
    row("seed", async (model) => {
      const ask = () => generateText({ model, prompt: "Tell me a story.", maxOutputTokens: 16, temperature: 0.9, seed: 42, maxRetries: 0 });
      expect((await ask()).text).toBe((await ask()).text);
    }),
    row("error: unknown model", async (_model, target) => {
      const error = await failureOf(generateText({ model: modelFor(target, "no-such-model"), prompt: "hi", maxRetries: 0 }));
      expect(refusalOf(error)?.status).toBe(404);
    }),
    row("error: bad key", async (_model, target) => {
      const error = await failureOf(generateText({ model: modelFor(target, target.chatModel, "llmgw_key_not-a-key"), prompt: "hi", maxRetries: 0 }));
      expect(refusalOf(error)?.status).toBe(401);
    }),
  ].filter((each) => !skip.includes(each.feature));
}

export const aiSdkRows: BatteryRow[] = [
  ...languageRows("AI SDK @ai-sdk/openai .chat()", openaiChat),
  {
    client: "AI SDK @ai-sdk/openai .chat()",
    feature: "logprobs",
    run: async (target) => {
      const result = await generateText({ model: openaiChat(target, target.chatModel), prompt: "Say hello.", maxOutputTokens: 8, maxRetries: 0, providerOptions: { openai: { logprobs: 2 } } });
      const logprobs = result.providerMetadata?.openai?.logprobs as { token: string; logprob: number; top_logprobs: unknown[] }[] | undefined;
      expect(logprobs?.length).toBeGreaterThan(0);
      expect(logprobs?.[0]?.top_logprobs).toHaveLength(2);
    },
  },
  {
    client: "AI SDK @ai-sdk/openai .chat()",
    feature: "embeddings",
    run: async (target) => {
      const result = await embedMany({ model: createOpenAI({ baseURL: `${target.url}/v1`, apiKey: target.key }).embedding(target.embeddingModel), values: ["one apple", "two pears"], maxRetries: 0 });
      expect(result.embeddings).toHaveLength(2);
      expect(result.embeddings[0]?.length).toBeGreaterThan(0);
    },
  },
  // The Responses API has neither stop sequences nor a seed: the SDK warns and leaves them out, so those rows do not apply.
  ...languageRows("AI SDK @ai-sdk/openai (Responses)", openaiResponses, ["stop", "seed"]),
  ...languageRows("AI SDK @ai-sdk/openai-compatible", compatibleChat),
  {
    client: "AI SDK @ai-sdk/openai-compatible",
    feature: "embeddings",
    run: async (target) => {
      const result = await embedMany({ model: compatible(target).embeddingModel(target.embeddingModel), values: ["one apple", "two pears"], maxRetries: 0 });
      expect(result.embeddings).toHaveLength(2);
      expect(result.embeddings[0]?.length).toBeGreaterThan(0);
    },
  },
];
