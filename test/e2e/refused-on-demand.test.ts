import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelYaml, startCluster, type Cluster } from "../support/cluster.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin } from "../support/processes.js";

/**
 * An on-demand model whose only profile wants an H100 while both H100s serve
 * a standard model it may not preempt: placement refuses it as soon as a
 * request reports demand. The waiting request is answered then, with
 * placement's reason, by the server's own gateway and by a `llmgw gateway`
 * following the server's routing table, however long the model's deadline.
 */
describe("a request for an on-demand model that placement refuses", () => {
  let cluster: Cluster;
  let gateway: ChildProcess | undefined;
  let gatewayUrl = "";

  beforeAll(async () => {
    cluster = await startCluster("llmgw-refused-on-demand-", ["node-a"], { "node-a": "2xH100-80GB@nvl0,cpu:16c/64g" });
    await cluster.addModel("steady", modelYaml("steady", "", `{ engine: vllm, source: "hf://example/steady@main", gpu_class: h100, gpus: 2 }`), "--wait");
    // The deadline is the default's 120 s, written out: only an answer at placement's refusal comes within the client's 20 s.
    // One model per gateway, each asked for the first time by the test (no demand, so no refusal, before it).
    for (const name of ["burst-a", "burst-b"]) {
      await cluster.addModel(name, modelYaml(name, "scaling: { min: 0, max: 1 }\nqueue_timeout: 120s\n", `{ engine: vllm, source: "hf://example/burst@main", gpu_class: h100, gpus: 1 }`));
    }
    gateway = spawn(process.execPath, [llmgwBin, "gateway", "--server", cluster.server.url, "--listen", "127.0.0.1:0", "--auth", "open"], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LLMGW_TOKEN: cluster.server.token, LLMGW_SERVER: undefined },
    });
    let output = "";
    gateway.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    gateway.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    gatewayUrl = await waitFor(async () => /listening on (http:\/\/[\d.:]+)/.exec(output)?.[1], 30_000, "the extra gateway to listen");
  }, 120_000);

  afterAll(async () => {
    if (gateway) killGroup(gateway.pid);
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  /** A bounded wait in the client guards the test; the model's own deadline (120 s) is what a fix must beat. */
  const ask = (url: string, model: string) =>
    new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused-on-an-open-gateway", maxRetries: 0, timeout: 20_000 }).chat.completions
      .create({ model, messages: [{ role: "user", content: "Hi" }] })
      .then(
        () => undefined,
        (error: unknown) => error,
      );

  it.each([
    ["the server's own gateway", "burst-a", () => cluster.server.url],
    ["a `llmgw gateway` following the server", "burst-b", () => gatewayUrl],
  ])("is answered through %s with a 503 that carries placement's reason", async (_side, model, url) => {
    expect((await cluster.model(model)).placement?.state).not.toBe("unplaceable");
    const refused = await ask(url(), model);
    expect(refused).toBeInstanceOf(APIError);
    const error = refused as APIError;
    expect({ status: error.status, code: error.code }).toEqual({ status: 503, code: "model_unavailable" });
    expect(error.message).toContain(`model ${model} has no replica and none will start: placement cannot place ${model}: 0 of 1 node: 1 has no free h100`);
    const events = await cluster.events(model);
    expect(events.some((event) => event.kind === "model-unplaceable")).toBe(true);
  }, 60_000);
});
