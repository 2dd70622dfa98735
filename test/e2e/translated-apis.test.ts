import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import OpenAI7 from "openai7";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyModelGguf } from "../../src/engines/llama/tiny-gguf.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * Anthropic's Messages API, the Responses API on an engine without it, and
 * GET /v1/models/{id}, end to end: a real `llmgw server` with gateway keys,
 * a simulated agent running a vLLM model and a llama.cpp one (the simulated
 * engine stands in for each and, like llama-server, serves no /v1/responses
 * for the second), and the official clients unchanged. The vLLM model's
 * Messages are passed through to the simulated vLLM, which serves them; the
 * llama.cpp model's (a simulated node stands in for the built-in engine too)
 * are translated.
 */
const weatherTool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

describe("Anthropic's Messages API, translated Responses and models.retrieve through the gateway", () => {
  let server: ServerProcess;
  let agent: ChildProcess | undefined;
  let key = "";
  let scopedKey = "";
  const ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
  const anthropic = (apiKey = key) => new Anthropic({ baseURL: server.url, apiKey, maxRetries: 0, timeout: 60_000 });
  const openai = (apiKey = key) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });

  async function createKey(...args: string[]): Promise<string> {
    const created = await ctl("key", "create", ...args);
    expect(created.code, created.stderr).toBe(0);
    return /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1] as string;
  }

  beforeAll(async () => {
    const folder = temporaryDirectory("llmgw-translated-apis-");
    // The simulated engine answers in place of llama-server; the gateway counts this model's prompts with the file's own tokenizer.
    const gguf = path.join(folder, "cpu-chat.gguf");
    writeFileSync(gguf, tinyModelGguf());
    writeFileSync(
      path.join(folder, "server.yaml"),
      [
        "models:",
        "  - name: gpu-chat",
        "    context: 4096",
        "    aliases: [house-model]",
        '    profiles: [{ engine: vllm, source: "hf://example/gpu-chat@main", gpus: 1 }]',
        "  - name: cpu-chat",
        "    context: 4096",
        `    profiles: [{ engine: llamacpp, source: "${gguf}", memory_gb: 1, cpu_cores: 1 }]`,
        "",
      ].join("\n"),
    );
    server = await startServerProcess({ cwd: folder, dataDir: path.join(folder, "server-data"), args: ["-c", "server.yaml"] });
    const joinToken = (JSON.parse((await ctl("node", "token", "--json")).stdout) as { token: string }).token;
    agent = spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", "node-a", "--data-dir", path.join(folder, "node-a"), "--simulate", "1xH100-80GB@nvl0,cpu:16c/64g"], {
      detached: true,
      stdio: "ignore",
      env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
    });
    await waitFor(
      async () => {
        const replicas = (JSON.parse((await ctl("replicas", "--json")).stdout) as { replicas: ReplicaView[] }).replicas;
        return ["gpu-chat", "cpu-chat"].every((model) => replicas.some((replica) => replica.model === model && replica.state === "ready"));
      },
      90_000,
      "both models ready",
      200,
    );
    key = await createKey("anthropic-user");
    scopedKey = await createKey("gpu-only", "--models", "gpu-chat");
    // The gateway follows the table within a second of a change: both models answer before the tests begin.
    await waitFor(async () => (await openai().models.list()).data.length >= 3, 10_000, "the models in the gateway's table", 100);
  }, 180_000);

  afterAll(async () => {
    const replicas = await ctl("replicas", "--json").then((result) => (JSON.parse(result.stdout) as { replicas: ReplicaView[] }).replicas).catch(() => [] as ReplicaView[]);
    for (const replica of replicas) killGroup(replica.pid);
    killGroup(agent?.pid);
    await server?.stop();
  });

  it("answers messages.create with a system prompt and several turns, and records its usage against the key", async () => {
    const { data: message, response } = await anthropic()
      .messages.create({
        model: "house-model",
        max_tokens: 24,
        system: "You answer briefly.",
        messages: [
          { role: "user", content: "Hello." },
          { role: "assistant", content: "Hi. What can I do?" },
          { role: "user", content: [{ type: "text", text: "Tell me about the sea." }] },
        ],
      })
      .withResponse();
    expect(message.type).toBe("message");
    expect(message.role).toBe("assistant");
    expect(message.id).toMatch(/^msg_/);
    expect(message.content[0]?.type).toBe("text");
    expect((message.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-llmgw-model")).toBe("gpu-chat");

    const usage = JSON.parse((await ctl("usage", "--key", "anthropic-user", "--json")).stdout) as { usage: { model: string; requests: number; prompt_tokens: number; completion_tokens: number }[] };
    const row = usage.usage.find((entry) => entry.model === "gpu-chat");
    expect(row?.requests).toBeGreaterThanOrEqual(1);
    expect(row?.prompt_tokens).toBeGreaterThanOrEqual(message.usage.input_tokens);
    expect(row?.completion_tokens).toBeGreaterThanOrEqual(message.usage.output_tokens);
  });

  it("ends at max_tokens and says so", async () => {
    const message = await anthropic().messages.create({ model: "gpu-chat", max_tokens: 2, messages: [{ role: "user", content: "Write a long story about the sea." }] });
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage.output_tokens).toBe(2);
  });

  it("streams a message with Anthropic's event sequence, the text whole in the final message", async () => {
    const stream = anthropic().messages.stream({ model: "gpu-chat", max_tokens: 16, messages: [{ role: "user", content: "Say hello." }] });
    const types: string[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
    }
    const final = await stream.finalMessage();
    // The client passes pings over; the raw stream below has one.
    expect(types.slice(0, 2)).toEqual(["message_start", "content_block_start"]);
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(text.length).toBeGreaterThan(0);
    expect(final.content).toEqual([{ type: "text", text, citations: null }].map(({ citations: _, ...block }) => expect.objectContaining(block)));
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBeGreaterThan(0);

    const raw = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": key }, body: JSON.stringify({ model: "gpu-chat", max_tokens: 4, stream: true, messages: [{ role: "user", content: "Hi" }] }) });
    expect(raw.headers.get("content-type")).toContain("text/event-stream");
    expect((await raw.text()).split("\n").filter((line) => line.startsWith("event: ")).slice(0, 3)).toEqual(["event: message_start", "event: ping", "event: content_block_start"]);
  });

  it("streams a tool call as a tool_use block, and answers its tool_result in text", async () => {
    const stream = anthropic().messages.stream({
      model: "gpu-chat",
      max_tokens: 64,
      tools: [weatherTool],
      tool_choice: { type: "tool", name: "get_weather" },
      messages: [{ role: "user", content: "What is the weather in Oslo?" }],
    });
    const deltas: string[] = [];
    for await (const event of stream) if (event.type === "content_block_delta") deltas.push(event.delta.type);
    const call = await stream.finalMessage();
    expect(call.stop_reason).toBe("tool_use");
    expect(deltas).toContain("input_json_delta");
    const use = call.content.find((block): block is Anthropic.ToolUseBlock => block.type === "tool_use");
    expect(use?.name).toBe("get_weather");
    expect(typeof (use?.input as { city?: unknown }).city).toBe("string");

    const answer = await anthropic().messages.create({
      model: "gpu-chat",
      max_tokens: 32,
      tools: [weatherTool],
      messages: [
        { role: "user", content: "What is the weather in Oslo?" },
        { role: "assistant", content: call.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use?.id as string, content: "Sunny, 21 degrees." }] },
      ],
    });
    expect(answer.stop_reason).not.toBe("tool_use");
    expect(answer.content[0]?.type).toBe("text");
  });

  it("counts a request's input tokens with the gateway's own counter", async () => {
    const short = await anthropic().messages.countTokens({ model: "gpu-chat", messages: [{ role: "user", content: "Hi" }] });
    const long = await anthropic().messages.countTokens({ model: "gpu-chat", system: "You are a careful assistant.", messages: [{ role: "user", content: "Hi ".repeat(200) }] });
    expect(short.input_tokens).toBeGreaterThan(0);
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 100);
    // Tools and the calls in the conversation count too.
    const withTools = await anthropic().messages.countTokens({
      model: "gpu-chat",
      tools: [weatherTool],
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "Sunny" }] },
      ],
    });
    expect(withTools.input_tokens).toBeGreaterThan(short.input_tokens + 30);
  });

  it("refuses in Anthropic's error shape: an unknown model 404, a bad x-api-key 401, a model outside the key's scope 403, a missing max_tokens 400", async () => {
    const unknown = await anthropic().messages.create({ model: "no-such-model", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as Anthropic.NotFoundError).type).toBe("not_found_error");
    expect((unknown as Anthropic.NotFoundError).message).toContain("no model named no-such-model");

    const badKey = await anthropic("llmgw_key_not-one-we-made").messages.create({ model: "gpu-chat", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(badKey).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((badKey as Anthropic.AuthenticationError).type).toBe("authentication_error");

    const outOfScope = await anthropic(scopedKey).messages.create({ model: "cpu-chat", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(outOfScope).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const countOutOfScope = await anthropic(scopedKey).messages.countTokens({ model: "cpu-chat", messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(countOutOfScope).toBeInstanceOf(Anthropic.PermissionDeniedError);

    const noMaxTokens = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "gpu-chat", messages: [{ role: "user", content: "Hi" }] }) });
    expect(noMaxTokens.status).toBe(400);
    const body = (await noMaxTokens.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("max_tokens");
  });

  it("retrieves a model, an alias, and refuses an unknown one or one outside the key's scope with model_not_found", async () => {
    expect(await openai().models.retrieve("gpu-chat")).toMatchObject({ id: "gpu-chat", object: "model", owned_by: "llmgw" });
    expect(await openai().models.retrieve("house-model")).toMatchObject({ id: "house-model", parent: "gpu-chat" });
    for (const [client, id] of [
      [openai(), "no-such-model"],
      [openai(scopedKey), "cpu-chat"],
    ] as const) {
      const refused = await client.models.retrieve(id).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
      expect((refused as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    }
  });

  it("lists and retrieves models in Anthropic's shape for Anthropic's client", async () => {
    const ids: string[] = [];
    for await (const entry of anthropic(scopedKey).models.list()) ids.push(entry.id);
    expect(ids).toEqual(["gpu-chat"]);
    expect(await anthropic().models.retrieve("house-model")).toMatchObject({ type: "model", id: "house-model", display_name: "house-model" });
    expect(await anthropic(scopedKey).models.retrieve("cpu-chat").catch((error: unknown) => error)).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it("answers responses.create for a llama.cpp model by translation, with openai 6 and 7", async () => {
    const answers = [
      await openai().responses.create({ model: "cpu-chat", instructions: "Answer briefly.", input: "Say hello.", max_output_tokens: 16 }),
      await new OpenAI7({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 }).responses.create({ model: "cpu-chat", instructions: "Answer briefly.", input: "Say hello.", max_output_tokens: 16 }),
    ];
    for (const response of answers) {
      expect(response.object).toBe("response");
      expect(response.id).toMatch(/^resp_/);
      expect(["completed", "incomplete"]).toContain(response.status);
      expect(response.output_text.length).toBeGreaterThan(0);
      expect(response.usage?.input_tokens).toBeGreaterThan(0);
      expect(response.usage?.total_tokens).toBe((response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0));
    }
  });

  it("streams a translated response with the Responses API's events", async () => {
    const stream = openai().responses.stream({ model: "cpu-chat", input: [{ role: "user", content: "Say hello." }], max_output_tokens: 16 });
    const types: string[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    const final = await stream.finalResponse();
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types).toContain("response.output_text.done");
    expect(types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    expect(final.output_text).toBe(text);
    expect(final.usage?.output_tokens).toBeGreaterThan(0);
  });

  it("makes a function call round trip through the Responses API on a llama.cpp model, the output a tool result", async () => {
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", description: "The weather in a city", parameters: weatherTool.input_schema, strict: false }];
    const call = await openai().responses.create({ model: "cpu-chat", input: "What is the weather in Oslo?", tools, tool_choice: "required", max_output_tokens: 64 });
    const functionCall = call.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === "function_call");
    expect(functionCall?.name).toBe("get_weather");
    expect(typeof (JSON.parse(functionCall?.arguments ?? "{}") as { city?: unknown }).city).toBe("string");

    const answer = await openai().responses.create({
      model: "cpu-chat",
      tools,
      max_output_tokens: 32,
      input: [{ role: "user", content: "What is the weather in Oslo?" }, functionCall as OpenAI.Responses.ResponseFunctionToolCall, { type: "function_call_output", call_id: functionCall?.call_id as string, output: "Sunny, 21 degrees." }],
    });
    expect(answer.output[0]?.type).toBe("message");
    expect(answer.output_text.length).toBeGreaterThan(0);
  });

  it("translates text.format json_schema to a structured answer, and refuses previous_response_id", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    const structured = await openai().responses.create({ model: "cpu-chat", input: "Name a city.", text: { format: { type: "json_schema", name: "city", schema, strict: true } }, max_output_tokens: 64 });
    expect(typeof (JSON.parse(structured.output_text) as { city?: unknown }).city).toBe("string");

    const refused = await openai().responses.create({ model: "cpu-chat", input: "And then?", previous_response_id: "resp_earlier" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("keeps no responses");
  });
});
