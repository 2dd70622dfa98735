import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { llamacppDriver } from "../drivers/llamacpp.js";
import { vllmDriver } from "../drivers/vllm.js";
import { startSimEngine, type SimEngineHandle } from "./sim-engine.js";

/** The simulated engine's own /v1/messages, as vLLM serves it, straight from Anthropic's client (no gateway between). */

const model = "qwen2.5-7b";
const running: SimEngineHandle[] = [];

async function start(engine: "vllm" | "llamacpp"): Promise<SimEngineHandle> {
  const driver = engine === "vllm" ? vllmDriver : llamacppDriver;
  const launch = driver.build(testLaunchInput({ port: 0, context: 4096 }));
  const sim = await startSimEngine({ engine, argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "100" }, log: () => undefined, exit: () => undefined });
  running.push(sim);
  return sim;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((sim) => sim.close()));
});

const time = { name: "get_time", input_schema: { type: "object" as const, properties: { zone: { type: "string" } }, required: ["zone"] } };

describe("the simulated engine's Messages API", () => {
  it("answers as vLLM does: text with usage, an image block read as content, a named tool streamed piece by piece, and its result answered", async () => {
    const sim = await start("vllm");
    const client = new Anthropic({ baseURL: sim.url, apiKey: "unused", maxRetries: 0 });
    const image = { type: "image" as const, source: { type: "base64" as const, media_type: "image/png" as const, data: "iVBORw0KGgo=" } };
    const message = await client.messages.create({ model, max_tokens: 16, system: "Be brief.", messages: [{ role: "user", content: [{ type: "text", text: "What is in this picture?" }, image] }] });
    expect(message.content[0]?.type).toBe("text");
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);

    const stream = client.messages.stream({ model, max_tokens: 200, tools: [time], tool_choice: { type: "tool", name: "get_time" }, messages: [{ role: "user", content: "Time in Oslo?" }] });
    let pieces = 0;
    stream.on("inputJson", () => (pieces += 1));
    const asked = await stream.finalMessage();
    const use = asked.content.find((block) => block.type === "tool_use");
    expect(use?.type === "tool_use" ? [use.name, typeof (use.input as { zone?: unknown }).zone] : undefined).toEqual(["get_time", "string"]);
    expect(pieces).toBeGreaterThan(1);
    expect(asked.stop_reason).toBe("tool_use");

    const answered = await client.messages.create({
      model,
      max_tokens: 32,
      tools: [time],
      messages: [
        { role: "user", content: "Time in Oslo?" },
        { role: "assistant", content: asked.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use?.type === "tool_use" ? use.id : "", content: "12:00" }] },
      ],
    });
    expect(answered.stop_reason).not.toBe("tool_use");
  });

  it("refuses a request without max_tokens in Anthropic's shape, and is not served as llama.cpp (which stands in for the built-in engine too)", async () => {
    const vllm = await start("vllm");
    const refused = await fetch(`${vllm.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });

    const llama = await start("llamacpp");
    const absent = await fetch(`${llama.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }) });
    expect(absent.status).toBe(404);
  });
});
