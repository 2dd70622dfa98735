import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import type net from "node:net";
import path from "node:path";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor as waitUntil } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const providerKey = "sk-fake-provider-5b1f0c9a7e";

function serverYaml(providerUrl: string): string {
  return `gateway:
  auth: open
models:
  - name: tiny-chat
    context: 4096
    max_output: 1024
    aliases: [tiny]
    profiles:
      - { engine: vllm, source: "hf://example/tiny-chat@main", gpus: 1 }
  - name: slow-chat
    context: 4096
    profiles:
      - { engine: vllm, source: "hf://example/slow-chat@main", gpus: 1, env: { LLMGW_SIM_SPEED: "0.02" } }
  - name: cold-chat
    scaling: { min: 0, max: 1 }
    queue_timeout: 60s
    profiles:
      - { engine: vllm, source: "hf://example/cold-chat@main", gpus: 1 }
  # No node has B200 cards: demand for these can never be placed.
  - name: gone-chat
    scaling: { min: 0, max: 1 }
    queue_timeout: 1s
    fallbacks: [tiny-chat]
    profiles:
      - { engine: vllm, source: "hf://example/gone-chat@main", gpu_class: b200, gpus: 1 }
  - name: never-chat
    scaling: { min: 0, max: 1 }
    queue_timeout: 1s
    profiles:
      - { engine: vllm, source: "hf://example/never-chat@main", gpu_class: b200, gpus: 1 }
  - name: provider-chat
    external: { base_url: "${providerUrl}/v1", api_key_env: FAKE_PROVIDER_KEY, model: upstream-model }
`;
}


interface ProviderCall {
  readonly authorization: string | undefined;
  readonly body: { model?: string };
}

/** A stand-in for a hosted provider: answers one chat completion, and only to its own key. */
async function startFakeProvider(calls: ProviderCall[]): Promise<{ url: string; server: Server }> {
  const server = createServer((request: IncomingMessage, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      const body = JSON.parse(text || "{}") as { model?: string };
      calls.push({ authorization: request.headers.authorization, body });
      if (request.headers.authorization !== `Bearer ${providerKey}`) {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", param: null, code: "invalid_api_key" } }));
        return;
      }
      response.writeHead(200, { "content-type": "application/json", "x-provider-secret-header": "internal" });
      response.end(
        JSON.stringify({
          id: "chatcmpl-provider-1",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: "hello from the provider" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, server };
}

/** The simulated engine's first line of an answer: "Simulated answer from MODEL: " and the prompt's first words. */
const firstLine = (text: string | null | undefined) => text?.split("\n\n")[0];

/** Checks here run `llmgw ctl` (a process each): polled every 100 ms. */
const waitFor = <T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string) => waitUntil(check, timeoutMs, what, 100);

describe("the gateway end to end: a server, two simulated agents, an extra gateway, the openai client", () => {
  let directory: string;
  let server: ServerProcess;
  let provider: { url: string; server: Server };
  const providerCalls: ProviderCall[] = [];
  const agents: ChildProcess[] = [];
  let extraGateway: ChildProcess | undefined;
  let extraGatewayUrl = "";
  let extraGatewayOutput = "";

  const ctl = async (...args: string[]) => {
    const result = await runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const replicas = async () => (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
  const client = (baseURL = `${server.url}/v1`) => new OpenAI({ baseURL, apiKey: "unused-on-an-open-gateway", maxRetries: 0, timeout: 60_000 });
  const metrics = async (url = server.url) => await (await fetch(`${url}/metrics`)).text();
  const startReplica = async (model: string, node: string, id: string) => {
    await ctl("replica", "start", model, "--node", node, "--id", id, "--json");
    return await waitFor(async () => (await replicas()).find((replica) => replica.id === id && replica.state === "ready"), 60_000, `${id} ready`);
  };
  /** The gateway follows the table within a second of a change. */
  const routed = async (url: string, model: string, count: number) =>
    await waitFor(async () => new RegExp(`llmgw_gateway_replicas\\{model="${model}",state="ready"\\} ${count}\\b`).test(await metrics(url)), 10_000, `${count} ready ${model} in ${url}'s table`);

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-gateway-e2e-");
    provider = await startFakeProvider(providerCalls);
    writeFileSync(path.join(directory, "server.yaml"), serverYaml(provider.url));
    process.env.FAKE_PROVIDER_KEY = providerKey;
    try {
      server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--log-level", "info"] });
    } finally {
      delete process.env.FAKE_PROVIDER_KEY;
    }
    const joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
    for (const name of ["node-a", "node-b"]) {
      agents.push(
        spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", name, "--data-dir", path.join(directory, name), "--simulate", "4xH100-80GB@nvl0,cpu:16c/64g"], {
          detached: true,
          stdio: "ignore",
          env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
        }),
      );
    }
    await waitFor(async () => {
      const nodes = (JSON.parse(await ctl("nodes", "--json")) as { nodes: { state: string }[] }).nodes;
      return nodes.length === 2 && nodes.every((node) => node.state === "ready");
    }, 30_000, "two ready nodes");
    await startReplica("tiny-chat", "node-a", "tiny-a");
    await startReplica("tiny-chat", "node-b", "tiny-b");
    await startReplica("slow-chat", "node-a", "slow-a");
    await routed(server.url, "tiny-chat", 2);
    await routed(server.url, "slow-chat", 1);

    extraGateway = spawn(process.execPath, [llmgwBin, "gateway", "--server", server.url, "--listen", "127.0.0.1:0", "--auth", "open"], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LLMGW_TOKEN: server.token, LLMGW_SERVER: undefined },
    });
    extraGateway.stdout?.on("data", (chunk: Buffer) => (extraGatewayOutput += chunk.toString()));
    extraGateway.stderr?.on("data", (chunk: Buffer) => (extraGatewayOutput += chunk.toString()));
    extraGatewayUrl = await waitFor(async () => /listening on (http:\/\/[\d.:]+)/.exec(extraGatewayOutput)?.[1], 30_000, "the extra gateway to listen");
  }, 180_000);

  afterAll(async () => {
    for (const replica of await replicas().catch(() => [] as ReplicaView[])) killGroup(replica.pid);
    killGroup(extraGateway?.pid);
    for (const agent of agents) killGroup(agent.pid);
    await server?.stop();
    await new Promise((resolve) => provider?.server.close(resolve));
  });

  it("runs the server with its young generation sized for serving, in the very process it was started as", () => {
    // The process started as `node bin/llmgw.js server` replaced itself (same pid) with node given the serving flags;
    // node without process.execve (before 22.15) runs it as started.
    const commandLine = readFileSync(`/proc/${server.child.pid}/cmdline`, "utf8").split("\0");
    const tuned = typeof (process as { execve?: unknown }).execve === "function";
    expect(commandLine.includes("--min-semi-space-size=16") && commandLine.includes("--max-semi-space-size=16")).toBe(tuned);
    const script = commandLine.findIndex((argument) => argument.endsWith("llmgw.js"));
    expect(commandLine.slice(script + 1, script + 4)).toEqual(["server", "--listen", "127.0.0.1:0"]);
  });

  it("lists models, aliases and external models at GET /v1/models with the openai client", async () => {
    const ids: string[] = [];
    for await (const model of client().models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(["tiny-chat", "tiny", "slow-chat", "cold-chat", "provider-chat"]));
  });

  it("answers chat, completions and embeddings, streaming and not, on the server's /v1 and on an extra gateway", async () => {
    for (const base of [`${server.url}/v1`, `${extraGatewayUrl}/v1`]) {
      const openai = client(base);
      const { data: chat, response } = await openai.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 }).withResponse();
      // The simulated engine's first line names the model that answered and echoes the prompt: eight tokens, all of it.
      expect(firstLine(chat.choices[0]?.message.content)).toBe("Simulated answer from tiny-chat: Say hello.");
      expect(chat.usage?.completion_tokens).toBe(8);
      // An alias is answered by the model it names, and the answer says so.
      expect(response.headers.get("x-llmgw-model")).toBe("tiny-chat");
      expect(response.headers.get("x-request-id")).toBeTruthy();

      const stream = await openai.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Say hello." }], max_tokens: 8, stream: true });
      let streamed = "";
      const chunks: unknown[] = [];
      for await (const chunk of stream) {
        chunks.push(chunk);
        streamed += chunk.choices[0]?.delta?.content ?? "";
      }
      expect(firstLine(streamed)).toBe("Simulated answer from tiny-chat: Say hello.");
      // The gateway asked the engine for usage to count it, and strips it again for a client that did not ask.
      expect(chunks.some((chunk) => (chunk as { usage?: unknown }).usage)).toBe(false);

      const withUsage = await openai.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4, stream: true, stream_options: { include_usage: true } });
      let usage: unknown;
      for await (const chunk of withUsage) usage ??= chunk.usage ?? undefined;
      expect(usage).toMatchObject({ completion_tokens: expect.any(Number) });

      const completion = await openai.completions.create({ model: "tiny-chat", prompt: "Once upon a time", max_tokens: 8 });
      // Its first line and the prompt's four words are the eight tokens asked for.
      expect(completion.choices[0]?.text).toBe("Simulated answer from tiny-chat: Once upon a time");
      let completionText = "";
      for await (const chunk of await openai.completions.create({ model: "tiny-chat", prompt: "Once upon a time", max_tokens: 8, stream: true })) completionText += chunk.choices[0]?.text ?? "";
      expect(completionText).toBe("Simulated answer from tiny-chat: Once upon a time");

      const embedding = await openai.embeddings.create({ model: "tiny-chat", input: ["one", "two"] });
      expect(embedding.data).toHaveLength(2);
      expect(embedding.data[0]?.embedding.length).toBeGreaterThan(0);
    }
    const counted = await metrics();
    expect(counted).toMatch(/llmgw_gateway_requests_total\{model="tiny-chat",status="200"\} \d+/);
    expect(counted).toMatch(/llmgw_gateway_tokens_total\{model="tiny-chat",direction="out"\} [1-9]/);
    expect(counted).toContain("llmgw_gateway_time_to_first_token_seconds_bucket");
  });

  it("keeps a client's x-request-id and returns it", async () => {
    const answer = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "trace-abc-123" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-request-id")).toBe("trace-abc-123");
  });

  it("refuses a request over the model's context or max_output before any engine sees it, in OpenAI's shape", async () => {
    const before = await fetch(`${server.url}/metrics`).then((answer) => answer.text());
    const overOutput = await client()
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 2000 })
      .catch((error: unknown) => error);
    expect(overOutput).toBeInstanceOf(APIError);
    expect((overOutput as APIError).status).toBe(400);
    expect((overOutput as APIError).code).toBe("context_length_exceeded");
    expect((overOutput as APIError).message).toContain("max_output of 1024");

    const longPrompt = "lorem ipsum dolor sit amet ".repeat(1000);
    const overContext = await client()
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: longPrompt }], max_tokens: 100 })
      .catch((error: unknown) => error);
    expect((overContext as APIError).status).toBe(400);
    expect((overContext as APIError).code).toBe("context_length_exceeded");
    expect((overContext as APIError).message).toContain("context of 4096");
    // Neither reached an engine: the gateway sent nothing to tiny-chat's replicas for them.
    const inFlightLines = (text: string) => text.match(/llmgw_gateway_requests_total\{model="tiny-chat",status="400"\} (\d+)/)?.[1];
    expect(Number(inFlightLines(await metrics()))).toBe(Number(inFlightLines(before) ?? 0) + 2);
  });

  it("answers an unknown model 404 in OpenAI's shape", async () => {
    const error = await client()
      .chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "Hi" }] })
      .catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(404);
    expect((error as APIError).code).toBe("model_not_found");
  });

  it("refuses a direct call to an engine without its replica key", async () => {
    const replica = (await replicas()).find((candidate) => candidate.id === "tiny-a") as ReplicaView;
    const direct = new OpenAI({ baseURL: `${replica.endpoint}/v1`, apiKey: "not-the-replica-key", maxRetries: 0 });
    const error = await direct.chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }] }).catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(401);
    const bare = await fetch(`${replica.endpoint}/v1/models`);
    expect(bare.status).toBe(401);
    // The key is in no answer of the admin API, and in no replica log.
    expect(await ctl("replicas", "--json")).not.toMatch(/llmgw_replica_/);
    const logs = await ctl("logs", "tiny-a", "--tail", "1000");
    expect(logs).toContain("sim-engine");
    expect(logs).not.toMatch(/llmgw_replica_/);
    // The routing table carries the keys, so a read-only token cannot have it; an admin token can (the gateways').
    const readToken = (JSON.parse(await ctl("token", "create", "dashboard", "--role", "read", "--json")) as { token: string }).token;
    const asReader = await fetch(`${server.url}/api/v1/routing`, { headers: { authorization: `Bearer ${readToken}` } });
    expect(asReader.status).toBe(403);
    expect(await asReader.text()).not.toMatch(/llmgw_replica_/);
    const asAdmin = await fetch(`${server.url}/api/v1/routing`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(await asAdmin.text()).toMatch(/llmgw_replica_/);
    // Nor in the agent's state file.
    expect(readFileSync(path.join(directory, "node-a", "agent-state.json"), "utf8")).not.toMatch(/llmgw_replica_/);
  });

  it("serves a model from zero: the request reports demand, the reconciler starts a replica, and the queued request is served", async () => {
    const pending = client().chat.completions.create({ model: "cold-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 }).withResponse();
    const { data, response } = await pending;
    expect((await replicas()).some((replica) => replica.model === "cold-chat" && replica.state === "ready")).toBe(true);
    expect(data.choices[0]?.message.content).toBe("Simulated answer from cold-chat:");
    expect(response.headers.get("x-llmgw-model")).toBe("cold-chat");
  });

  it("answers 503 with placement's reason, not a wait, when no replica of the model can be placed", async () => {
    // never-chat wants a b200, which no node has: placement refuses it, and the waiting request is told why.
    const answer = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "never-chat", messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(answer.status).toBe(503);
    const body = (await answer.json()) as { error: { code: string; message: string; type: string } };
    expect(body.error).toMatchObject({ code: "model_unavailable", type: "server_error" });
    expect(body.error.message).toContain("never-chat has no replica and none will start");
    expect(body.error.message).toMatch(/b200/);
  });

  it("falls back in the catalog's order when a model cannot get a replica, and says who answered", async () => {
    const { data, response } = await client().chat.completions.create({ model: "gone-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 }).withResponse();
    expect(data.choices[0]?.message.content).toBe("Simulated answer from tiny-chat:");
    expect(response.headers.get("x-llmgw-model")).toBe("tiny-chat");
  });

  it("proxies an external model with the server's key, which never reaches the client or the catalog", async () => {
    const { data, response } = await client().chat.completions.create({ model: "provider-chat", messages: [{ role: "user", content: "Hi" }] }).withResponse();
    expect(data.choices[0]?.message.content).toBe("hello from the provider");
    const call = providerCalls.at(-1) as ProviderCall;
    expect(call.authorization).toBe(`Bearer ${providerKey}`);
    expect(call.body.model).toBe("upstream-model");
    const headerText = [...response.headers.entries()].map(([name, value]) => `${name}: ${value}`).join("\n");
    expect(headerText).not.toContain(providerKey);
    expect(headerText).not.toContain("x-provider-secret-header");
    expect(JSON.stringify(data)).not.toContain(providerKey);
    expect(await ctl("models")).not.toContain(providerKey);
    expect(await ctl("models", "--json")).not.toContain(providerKey);
    // The extra gateway has no FAKE_PROVIDER_KEY in its environment: it names the variable, never a value.
    const error = await client(`${extraGatewayUrl}/v1`).chat.completions.create({ model: "provider-chat", messages: [{ role: "user", content: "Hi" }] }).catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(502);
    expect((error as APIError).message).toContain("FAKE_PROVIDER_KEY");
    expect(server.output()).not.toContain(providerKey);
    expect(extraGatewayOutput).not.toContain(providerKey);
  });

  it("sends requests to another replica when one dies before its first byte", async () => {
    const victim = (await replicas()).find((replica) => replica.id === "tiny-a") as ReplicaView;
    const retriesBefore = Number(/llmgw_gateway_upstream_retries_total\{model="tiny-chat"\} (\d+)/.exec(await metrics())?.[1] ?? 0);
    killGroup(victim.pid);
    // At once, while the routing table still lists the dead replica as ready.
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => client().chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 })),
    );
    for (const answer of answers) expect(answer.choices[0]?.message.content).toBe("Simulated answer from tiny-chat:");
    const retriesAfter = Number(/llmgw_gateway_upstream_retries_total\{model="tiny-chat"\} (\d+)/.exec(await metrics())?.[1] ?? 0);
    expect(retriesAfter).toBeGreaterThan(retriesBefore);
  });

  it("ends a stream cut mid-answer with an error event, never a clean end", async () => {
    const victim = (await replicas()).find((replica) => replica.id === "slow-a") as ReplicaView;
    const stream = await client().chat.completions.create({
      model: "slow-chat",
      messages: [{ role: "user", content: "Tell me a long story." }],
      max_tokens: 400,
      stream: true,
      // The simulated engine answers max_tokens in full with it (as vLLM does).
      ...({ ignore_eos: true } as Record<string, unknown>),
    });
    let received = 0;
    const outcome = await (async () => {
      try {
        for await (const chunk of stream) {
          received += 1;
          if (received === 3) killGroup(victim.pid);
          void chunk;
        }
        return "clean end";
      } catch (error) {
        return error;
      }
    })();
    expect(received).toBeGreaterThanOrEqual(3);
    expect(outcome).toBeInstanceOf(APIError);
    expect((outcome as APIError).message).toMatch(/stream broke off|ended the stream/);
  });

  it("serves the Prometheus metrics the operator reads", async () => {
    const text = await metrics();
    for (const name of [
      "llmgw_gateway_requests_total",
      "llmgw_gateway_request_duration_seconds",
      "llmgw_gateway_time_to_first_token_seconds",
      "llmgw_gateway_tokens_total",
      "llmgw_gateway_in_flight",
      "llmgw_gateway_queue_length",
      "llmgw_gateway_replicas",
      "llmgw_gateway_added_seconds",
    ]) {
      expect(text).toContain(name);
    }
    // No secret in the metrics either.
    expect(text).not.toMatch(/llmgw_replica_/);
    expect(readdirSync(directory)).toContain("server.yaml");
  });

  it("finishes a stream in flight when a gateway is stopped, then takes nothing new", async () => {
    const gatewayProcess = extraGateway as ChildProcess;
    const exited = new Promise<number | null>((resolve) => gatewayProcess.once("exit", (code) => resolve(code)));
    const stream = await client(`${extraGatewayUrl}/v1`).chat.completions.create({
      model: "tiny-chat",
      messages: [{ role: "user", content: "Tell me a long story." }],
      max_tokens: 1000,
      stream: true,
      ...({ ignore_eos: true } as Record<string, unknown>),
    });
    let chunks = 0;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      chunks += 1;
      if (chunks === 2) process.kill(gatewayProcess.pid as number, "SIGTERM");
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    // Every one of the 1,000 tokens arrived, and the stream ended as the engine ended it (a cut would have thrown).
    expect(finish).toBe("stop");
    expect(chunks).toBeGreaterThanOrEqual(1000);
    expect(await exited).toBe(0);
    await expect(fetch(`${extraGatewayUrl}/v1/models`)).rejects.toThrow();
  });
});
