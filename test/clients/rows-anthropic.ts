import Anthropic from "@anthropic-ai/sdk";
import { expect } from "vitest";
import { timeArguments, timeParameters, weatherArguments, weatherParameters } from "./battery-schemas.js";
import { failureOf, refusalOf, weatherPrompt, type BatteryRow, type BatteryTarget } from "./battery.js";

/** Anthropic's SDK 1.17 on the Messages API, with the gateway key as it sends keys (x-api-key). */

const client = "@anthropic-ai/sdk 1.17";
const weather = { name: "get_weather", description: "The weather in a city", input_schema: { ...weatherParameters, type: "object" as const } };
const time = { name: "get_time", description: "The time in a zone", input_schema: { ...timeParameters, type: "object" as const } };

const connect = (target: BatteryTarget, apiKey?: string) => new Anthropic({ baseURL: target.url, apiKey: apiKey ?? target.key, maxRetries: 0, timeout: 60_000 });

function row(feature: string, run: (anthropic: Anthropic, target: BatteryTarget) => Promise<void>): BatteryRow {
  return { client, feature, run: (target) => run(connect(target), target) };
}

/** The error type Anthropic's shape gives: `{"type": "error", "error": {"type", "message"}}`. */
function anthropicErrorType(error: unknown): unknown {
  return (error as { error?: { type?: unknown; error?: { type?: unknown } } }).error?.error?.type;
}

/** The gateway's count of Messages requests passed through (native) and translated, from its /metrics. */
async function apiModeCounts(target: BatteryTarget): Promise<{ native: number; translated: number }> {
  const text = await (await fetch(`${target.url}/metrics`)).text();
  const count = (mode: string) => Number(new RegExp(`^llmgw_gateway_api_mode_requests_total\\{api="messages",mode="${mode}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { native: count("native"), translated: count("translated") };
}

export const anthropicRows: BatteryRow[] = [
  row("messages: create", async (anthropic, { chatModel }) => {
    const message = await anthropic.messages.create({ model: chatModel, max_tokens: 16, system: "Be brief.", messages: [{ role: "user", content: "Say hello." }] });
    expect(message.content[0]?.type).toBe("text");
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  }),
  row("messages: stream", async (anthropic, { chatModel }) => {
    const stream = anthropic.messages.stream({ model: chatModel, max_tokens: 16, messages: [{ role: "user", content: "Say hello." }] });
    let text = "";
    stream.on("text", (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(text.length).toBeGreaterThan(0);
    expect(final.content[0]?.type === "text" ? final.content[0].text : undefined).toBe(text);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  }),
  row("messages: tools (named)", async (anthropic, { chatModel }) => {
    const message = await anthropic.messages.create({ model: chatModel, max_tokens: 200, tools: [weather, time], tool_choice: { type: "tool", name: "get_time" }, messages: [{ role: "user", content: "What time is it in Oslo?" }] });
    const uses = message.content.flatMap((block) => (block.type === "tool_use" ? [block] : []));
    expect(uses.map((use) => use.name)).toEqual(["get_time"]);
    timeArguments.parse(uses[0]?.input);
    expect(message.stop_reason).toBe("tool_use");
  }),
  row("messages: tools (round trip)", async (anthropic, { chatModel }) => {
    const asked = await anthropic.messages.create({ model: chatModel, max_tokens: 200, tools: [weather], tool_choice: { type: "any" }, messages: [{ role: "user", content: weatherPrompt }] });
    const use = asked.content.find((block) => block.type === "tool_use");
    expect(use?.type === "tool_use" ? use.name : undefined).toBe("get_weather");
    weatherArguments.parse(use?.type === "tool_use" ? use.input : undefined);
    const answered = await anthropic.messages.create({
      model: chatModel,
      max_tokens: 32,
      tools: [weather],
      messages: [
        { role: "user", content: weatherPrompt },
        { role: "assistant", content: asked.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use?.type === "tool_use" ? use.id : "", content: '{"temperature": 21}' }] },
      ],
    });
    expect(answered.content.length).toBeGreaterThan(0);
  }),
  row("messages: stream tools", async (anthropic, { chatModel }) => {
    const stream = anthropic.messages.stream({ model: chatModel, max_tokens: 200, tools: [time], tool_choice: { type: "tool", name: "get_time" }, messages: [{ role: "user", content: "What time is it in Oslo?" }] });
    let pieces = "";
    stream.on("inputJson", (partial) => (pieces += partial));
    const final = await stream.finalMessage();
    const use = final.content.find((block) => block.type === "tool_use");
    expect(use?.type === "tool_use" ? use.name : undefined).toBe("get_time");
    timeArguments.parse(use?.type === "tool_use" ? use.input : undefined);
    expect(JSON.parse(pieces)).toEqual(use?.type === "tool_use" ? use.input : undefined);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(final.stop_reason).toBe("tool_use");
  }),
  {
    client,
    // vLLM serves the Messages API itself, so the simulated vLLM gets it as sent; the built-in llama.cpp engine does not, so the gateway translates.
    feature: "messages: native on vLLM, translated on built-in llama.cpp",
    run: async (target) => {
      const before = await apiModeCounts(target);
      const message = await connect(target).messages.create({ model: target.chatModel, max_tokens: 8, messages: [{ role: "user", content: "Say hello." }] });
      expect(message.type).toBe("message");
      const after = await apiModeCounts(target);
      const mode = target.engine === "sim" ? "native" : "translated";
      const other = mode === "native" ? "translated" : "native";
      expect([after[mode] - before[mode], after[other] - before[other]]).toEqual([1, 0]);
    },
  },
  row("messages: count_tokens", async (anthropic, { chatModel }) => {
    const counted = await anthropic.messages.countTokens({ model: chatModel, messages: [{ role: "user", content: "Say hello to the world." }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
  }),
  row("error: unknown model", async (anthropic) => {
    const error = await failureOf(anthropic.messages.create({ model: "no-such-model", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }));
    expect([refusalOf(error)?.status, anthropicErrorType(error)]).toEqual([404, "not_found_error"]);
  }),
  {
    client,
    feature: "error: bad key",
    run: async (target) => {
      const error = await failureOf(connect(target, "llmgw_key_not-a-key").messages.create({ model: target.chatModel, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }));
      expect([refusalOf(error)?.status, anthropicErrorType(error)]).toEqual([401, "authentication_error"]);
    },
  },
];
