import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type AIMessageChunk } from "@langchain/core/messages";
import { ChatOpenAI, OpenAIEmbeddings, type ChatOpenAIFields } from "@langchain/openai";
import { expect } from "vitest";
import { z } from "zod";
import { person, timeArguments, timeParameters, weatherArguments, weatherParameters } from "./battery-schemas.js";
import { failureOf, refusalOf, stopFrom, weatherPrompt, type BatteryRow, type BatteryTarget } from "./battery.js";

/** LangChain JS 1.6's ChatOpenAI, on chat completions and with useResponsesApi, and its OpenAIEmbeddings. */

const client = "LangChain ChatOpenAI";
const responsesClient = "LangChain ChatOpenAI (useResponsesApi)";
const weather = { type: "function" as const, function: { name: "get_weather", description: "The weather in a city", parameters: weatherParameters } };
const time = { type: "function" as const, function: { name: "get_time", description: "The time in a zone", parameters: timeParameters } };

function chatModel(target: BatteryTarget, fields: ChatOpenAIFields = {}): ChatOpenAI {
  return new ChatOpenAI({ model: target.chatModel, apiKey: target.key, configuration: { baseURL: `${target.url}/v1` }, maxRetries: 0, maxTokens: 200, ...fields });
}

const textOf = (message: AIMessageChunk | AIMessage) => (typeof message.content === "string" ? message.content : message.content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join(""));

/**
 * The rows both of ChatOpenAI's APIs run. `required` is the tool_choice that
 * makes the one tool offered a must: "required" on chat completions; on the
 * Responses API, @langchain/openai 1.6 drops a string tool_choice ("required",
 * "auto", "none") and sends none at all, so a caller forces the call by
 * naming the tool, which it does send, and the row says so.
 */
function sharedRows(name: string, fields: ChatOpenAIFields, required: { choice: string; feature: string } = { choice: "required", feature: "tools: required" }): BatteryRow[] {
  const row = (feature: string, run: (target: BatteryTarget) => Promise<void>): BatteryRow => ({ client: name, feature, run });
  return [
    row("chat", async (target) => {
      const answer = await chatModel(target, { ...fields, maxTokens: 16 }).invoke("Say hello.");
      expect(textOf(answer).length).toBeGreaterThan(0);
      expect(answer.usage_metadata?.input_tokens).toBeGreaterThan(0);
    }),
    row("stream with usage", async (target) => {
      let whole: AIMessageChunk | undefined;
      for await (const chunk of await chatModel(target, { ...fields, maxTokens: 16 }).stream("Say hello.")) whole = whole === undefined ? chunk : whole.concat(chunk);
      expect(textOf(whole as AIMessageChunk).length).toBeGreaterThan(0);
      expect(whole?.usage_metadata?.output_tokens).toBeGreaterThan(0);
    }),
    row(required.feature, async (target) => {
      const answer = await chatModel(target, fields).bindTools([weather], { tool_choice: required.choice }).invoke(weatherPrompt);
      expect(answer.tool_calls?.map((call) => call.name)).toContain("get_weather");
      weatherArguments.parse(answer.tool_calls?.find((call) => call.name === "get_weather")?.args);
    }),
    row("tools: named", async (target) => {
      const answer = await chatModel(target, fields).bindTools([weather, time], { tool_choice: "get_time" }).invoke("What time is it in Oslo?");
      expect(answer.tool_calls?.map((call) => call.name)).toEqual(["get_time"]);
      timeArguments.parse(answer.tool_calls?.[0]?.args);
    }),
    row("tools: auto", async (target) => {
      const answer = await chatModel(target, fields).bindTools([weather, time], { tool_choice: "auto" }).invoke(weatherPrompt);
      // The model decides: calls of the tools offered, or text.
      if ((answer.tool_calls ?? []).length > 0) for (const call of answer.tool_calls ?? []) expect(["get_weather", "get_time"]).toContain(call.name);
      else expect(textOf(answer)).toEqual(expect.any(String));
    }),
    row("tools: round trip", async (target) => {
      const asked = await chatModel(target, fields).bindTools([weather], { tool_choice: required.choice }).invoke(weatherPrompt);
      const call = asked.tool_calls?.[0];
      expect(call?.name).toBe("get_weather");
      weatherArguments.parse(call?.args);
      const answered = await chatModel(target, { ...fields, maxTokens: 32 })
        .bindTools([weather])
        .invoke([new HumanMessage(weatherPrompt), asked, new ToolMessage({ tool_call_id: call?.id ?? "", content: '{"temperature": 21, "sky": "clear"}' })]);
      expect(textOf(answered).length + (answered.tool_calls?.length ?? 0)).toBeGreaterThan(0);
    }),
    row("structured: withStructuredOutput (strict jsonSchema)", async (target) => {
      const answer = await chatModel(target, fields).withStructuredOutput(person, { method: "jsonSchema", strict: true }).invoke("Invent a person.");
      expect(person.parse(answer)).toEqual(answer);
    }),
  ];
}

export const langchainRows: BatteryRow[] = [
  ...sharedRows(client, {}),
  { client, feature: "structured: withStructuredOutput (jsonMode)", run: async (target) => {
    const answer = await chatModel(target).withStructuredOutput(z.looseObject({}), { method: "jsonMode" }).invoke([new SystemMessage("Reply in JSON with keys: name, age"), new HumanMessage("Invent a person.")]);
    expect(answer).toBeTypeOf("object");
  } },
  { client, feature: "n", run: async (target) => {
    const result = await chatModel(target, { n: 2, maxTokens: 8 }).generate([[new HumanMessage("Say hello.")]]);
    expect(result.generations[0]).toHaveLength(2);
  } },
  { client, feature: "logprobs", run: async (target) => {
    const answer = await chatModel(target, { logprobs: true, topLogprobs: 2, maxTokens: 8 }).invoke("Say hello.");
    const content = (answer.response_metadata.logprobs as { content?: { top_logprobs: unknown[] }[] } | undefined)?.content ?? [];
    expect(content.length).toBeGreaterThan(0);
    expect(content[0]?.top_logprobs).toHaveLength(2);
  } },
  { client, feature: "stop", run: async (target) => {
    const model = chatModel(target, { temperature: 0, maxTokens: 24 });
    const { stop, before } = stopFrom(textOf(await model.invoke("Count to ten.", { seed: 1 })));
    const cut = await model.invoke("Count to ten.", { seed: 1, stop: [stop] });
    expect([textOf(cut), cut.response_metadata.finish_reason]).toEqual([before, "stop"]);
  } },
  { client, feature: "seed", run: async (target) => {
    const model = chatModel(target, { temperature: 0.9, maxTokens: 16 });
    const ask = async () => textOf(await model.invoke("Tell me a story.", { seed: 42 }));
    expect(await ask()).toBe(await ask());
  } },
  { client, feature: "embeddings", run: async (target) => {
    const embeddings = new OpenAIEmbeddings({ model: target.embeddingModel, apiKey: target.key, configuration: { baseURL: `${target.url}/v1` }, maxRetries: 0 });
    const vectors = await embeddings.embedDocuments(["one apple", "two pears"]);
    expect(vectors).toHaveLength(2);
    expect(vectors[0]?.length).toBeGreaterThan(0);
  } },
  { client, feature: "error: unknown model", run: async (target) => {
    const error = await failureOf(chatModel({ ...target, chatModel: "no-such-model" }).invoke("hi"));
    expect(refusalOf(error)?.status).toBe(404);
  } },
  { client, feature: "error: bad key", run: async (target) => {
    const error = await failureOf(chatModel({ ...target, key: "llmgw_key_not-a-key" }).invoke("hi"));
    expect(refusalOf(error)?.status).toBe(401);
  } },
  ...sharedRows(responsesClient, { useResponsesApi: true }, { choice: "get_weather", feature: "tools: required (sent as the tool's name)" }),
];
