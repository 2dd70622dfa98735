import { readFileSync } from "node:fs";
import Fastify from "fastify";
import OpenAI, { APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseModelFile } from "../../catalog/model-file.js";
import { comfyuiDriver } from "../../engines/drivers/comfyui.js";
import { testLaunchInput } from "../../engines/drivers/test-launch-input.js";
import { simulatedPng } from "../../engines/sim/sim-images.js";
import { startSimEngine, type SimEngineHandle } from "../../engines/sim/sim-engine.js";
import type { RoutingModel, RoutingTable } from "../../protocol/routing-table.js";
import { Gateway } from "../request/gateway.js";
import { routingModel } from "../testing/routing-model.js";
import type { GatewayPolicy, UsageRecord } from "../policy/gateway-policy.js";
import { GatewayRefusal } from "../policy/gateway-policy.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";

const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function simComfy(environment: Record<string, string> = {}): Promise<SimEngineHandle> {
  const launch = comfyuiDriver.build(testLaunchInput({ port: 0, modelName: "comfy" }));
  const sim = await startSimEngine({ engine: "comfyui", argv: launch.argv.slice(1), environment: { ...launch.env, ...environment }, log: () => undefined, exit: () => undefined });
  started.push(sim);
  return sim;
}

/** A preset's model entry, as the catalog reads it. */
function preset(name: string) {
  const text = readFileSync(new URL(`../../../presets/${name}.yaml`, import.meta.url), "utf8");
  return parseModelFile(JSON.stringify((parse(text) as { model: unknown }).model), `${name}.yaml`);
}

let revision = 1;
function comfyModel(name: string, presetName: string, endpoints: string[]): RoutingModel {
  const comfy = preset(presetName).profiles?.[0]?.comfy;
  if (!comfy) throw new Error(`${presetName} has no comfy block`);
  return routingModel(name, {
    queue_timeout_ms: 2000,
    engine: "comfyui",
    replicas: endpoints.map((endpoint, index) => ({ id: `${name}-${index}`, node: "node-1", endpoint, state: "ready" as const })),
    comfy: { workflow: comfy.workflow, inputs: { ...comfy.inputs }, outputs: comfy.outputs },
  });
}

const chatModel = (name: string): RoutingModel => ({ ...comfyModel(name, "flux1-schnell", []), engine: "vllm", comfy: null });

async function gatewayFor(models: RoutingModel[], policy: GatewayPolicy = openPolicy): Promise<{ gateway: Gateway; url: string }> {
  const gateway = new Gateway({ policy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined }, comfy: { runDeadlineMs: 10_000 } });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  started.push({ close: () => app.close() });
  gateway.swap({ revision: revision++, models, aliases: {} } satisfies RoutingTable);
  return { gateway, url };
}

const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "client-key", maxRetries: 0, timeout: 30_000 });

function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe("images through ComfyUI", () => {
  it("fills the prompt, size and count into the FLUX preset's workflow and returns the PNGs in base64", async () => {
    const engine = await simComfy();
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url])]);
    const answer = await client(url).images.generate({ model: "flux", prompt: "a lighthouse at dusk", size: "256x128", n: 2, response_format: "b64_json" });
    expect(answer.data).toHaveLength(2);
    const images = (answer.data ?? []).map((image) => Buffer.from(image.b64_json ?? "", "base64"));
    expect(images.map(pngSize)).toEqual([{ width: 256, height: 128 }, { width: 256, height: 128 }]);
    // Two images of one batch, two seeds: not the same picture twice.
    expect(images[0]?.equals(images[1] as Buffer)).toBe(false);
  });

  it("puts the prompt and seed into the workflow: the same pair gives the same image, another prompt another", async () => {
    const engine = await simComfy();
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url])]);
    const image = async (prompt: string) => {
      const answer = await fetch(`${url}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "flux", prompt, seed: 11, size: "64x64" }) });
      return (((await answer.json()) as { data: { b64_json: string }[] }).data[0] as { b64_json: string }).b64_json;
    };
    const first = await image("a lighthouse");
    expect(await image("a lighthouse")).toBe(first);
    expect(await image("a windmill")).not.toBe(first);
  });

  it("keeps an image asked for as url and serves it from the gateway's own path", async () => {
    const engine = await simComfy();
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url])]);
    const answer = await client(url).images.generate({ model: "flux", prompt: "a red fox", size: "64x64", response_format: "url" });
    const link = answer.data?.[0]?.url ?? "";
    expect(link.startsWith(`${url}/v1/llmgw/images/`)).toBe(true);
    const fetched = await fetch(link);
    expect(fetched.headers.get("content-type")).toBe("image/png");
    expect(pngSize(Buffer.from(await fetched.arrayBuffer()))).toEqual({ width: 64, height: 64 });
    const missing = await fetch(`${url}/v1/llmgw/images/0123456789abcdef0123456789abcdef.png`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("image_expired");
  });

  it("refuses an images request to a chat model, naming what it serves, and a chat request to an images model", async () => {
    const { url } = await gatewayFor([chatModel("chat"), comfyModel("flux", "flux1-schnell", [])]);
    const refused = await client(url).images.generate({ model: "chat", prompt: "a cat" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(400);
    expect((refused as APIError).code).toBe("wrong_model_task");
    expect((refused as APIError).message).toContain("model chat serves text (chat, completions, embeddings), not images");
    const chat = await client(url).chat.completions.create({ model: "flux", messages: [{ role: "user", content: "hi" }] }).catch((error: unknown) => error);
    expect((chat as APIError).status).toBe(400);
    expect((chat as APIError).message).toContain("model flux serves images, not text");
  });

  it("names a pooling model's own routes when it is asked for an image", async () => {
    const { url } = await gatewayFor([{ ...chatModel("reranker"), pooling: { flag: "--runner pooling", routes: ["rerank", "score"] } }]);
    const refused = await client(url).images.generate({ model: "reranker", prompt: "a cat" }).catch((error: unknown) => error);
    expect((refused as APIError).code).toBe("wrong_model_task");
    expect((refused as APIError).message).toContain("model reranker serves text by pooling (/v1/rerank, /v1/score), not images");
  });

  it("refuses a size that is not WIDTHxHEIGHT in steps of 8, before any engine sees it", async () => {
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [])]);
    const refused = (await client(url).images.generate({ model: "flux", prompt: "a cat", size: "1000x7" }).catch((error: unknown) => error)) as APIError;
    expect(refused.status).toBe(400);
    expect(refused.message).toContain("size: WIDTHxHEIGHT in pixels, each a multiple of 8");
  });

  it("maps ComfyUI's execution_error to a 502 carrying the engine's message", async () => {
    const engine = await simComfy({ LLMGW_SIM_FAULT: "execution-error" });
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url])]);
    const failed = (await client(url).images.generate({ model: "flux", prompt: "a cat", size: "64x64" }).catch((error: unknown) => error)) as APIError;
    expect(failed.status).toBe(502);
    expect(failed.code).toBe("engine_execution_failed");
    expect(failed.message).toContain("torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory");
    expect(failed.message).toContain("in node 31 (KSampler)");
  });

  it("tries another replica when one cannot be reached, and passes on a workflow the engine refuses with its words", async () => {
    const engine = await simComfy();
    // Port 1 refuses connections: a replica whose engine has just died.
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", ["http://127.0.0.1:1", engine.url])]);
    for (let round = 0; round < 3; round += 1) {
      const answer = await client(url).images.generate({ model: "flux", prompt: "a cat", size: "64x64" });
      expect(answer.data).toHaveLength(1);
    }
    const broken = await simComfy({ LLMGW_SIM_FAULT: "error-500" });
    const { url: brokenUrl } = await gatewayFor([comfyModel("flux", "flux1-schnell", [broken.url])]);
    const failed = (await client(brokenUrl).images.generate({ model: "flux", prompt: "a cat", size: "64x64" }).catch((error: unknown) => error)) as APIError;
    expect(failed.status).toBe(502);
    expect(failed.message).toContain("refused the workflow (500): simulated failure (fault error-500)");
  });

  it("applies a key's model scope and records each request, failed or not, for the key and model", async () => {
    const engine = await simComfy();
    const records: UsageRecord[] = [];
    const policy: GatewayPolicy = {
      authenticate: () => ({ key: "design-team", allowedModels: ["flux"] }),
      admit: (caller, name) => {
        if (caller.allowedModels !== null && !caller.allowedModels.includes(name)) throw new GatewayRefusal(403, "permission_error", "model_not_allowed", `key may not use ${name}`);
      },
      record: (usage) => void records.push(usage),
    };
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url]), comfyModel("flux-2", "flux1-schnell", [engine.url])], policy);
    await client(url).images.generate({ model: "flux", prompt: "a cat", size: "64x64" });
    const refused = (await client(url).images.generate({ model: "flux-2", prompt: "a cat" }).catch((error: unknown) => error)) as APIError;
    expect(refused.status).toBe(403);
    expect(records.map((record) => ({ key: record.caller.key, model: record.model, error: record.error }))).toEqual([
      { key: "design-team", model: "flux", error: false },
      { key: "design-team", model: "flux-2", error: true },
    ]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/llmgw_gateway_requests_total\{model="flux",status="200"\} 1/);
  });

  it("waits for a refusal decided in another process (the limits of several workers) and answers it", async () => {
    const engine = await simComfy();
    const records: UsageRecord[] = [];
    const policy: GatewayPolicy = {
      authenticate: () => ({ key: "design-team", allowedModels: null }),
      // As the worker's shared limits answer: a promise, settled after a round trip to the primary.
      admit: () => new Promise<void>((_resolve, reject) => setTimeout(() => reject(new GatewayRefusal(429, "rate_limit_error", "rate_limited", "key design-team: 2 requests a minute spent")), 5)),
      record: (usage) => void records.push(usage),
    };
    const { url } = await gatewayFor([comfyModel("flux", "flux1-schnell", [engine.url])], policy);
    const refused = (await client(url).images.generate({ model: "flux", prompt: "a cat", size: "64x64" }).catch((error: unknown) => error)) as APIError;
    expect(refused.status).toBe(429);
    expect(refused.message).toContain("2 requests a minute spent");
    expect(records.map((record) => record.error)).toEqual([true]);
  });
});

describe("image to 3D through ComfyUI", () => {
  const photo = simulatedPng(32, 32, 7);

  it("uploads the image, runs the Hunyuan3D preset's workflow and returns a GLB", async () => {
    const engine = await simComfy();
    const { url } = await gatewayFor([comfyModel("hunyuan3d", "hunyuan3d-2", [engine.url])]);
    const form = new FormData();
    form.set("image", new Blob([photo], { type: "image/png" }), "photo.png");
    const answer = await fetch(`${url}/v1/llmgw/comfy/hunyuan3d`, { method: "POST", body: form, headers: { "x-request-id": "mesh-request-1" } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("model/gltf-binary");
    expect(answer.headers.get("x-request-id")).toBe("mesh-request-1");
    const glb = Buffer.from(await answer.arrayBuffer());
    expect(glb.subarray(0, 4).toString("latin1")).toBe("glTF");
    expect(glb.readUInt32LE(4)).toBe(2);
    expect(glb.readUInt32LE(8)).toBe(glb.length);
  });

  it("takes the image as base64 JSON and answers the mesh in base64 when asked", async () => {
    const engine = await simComfy();
    const { url } = await gatewayFor([comfyModel("hunyuan3d", "hunyuan3d-2", [engine.url])]);
    const answer = await fetch(`${url}/v1/llmgw/comfy/hunyuan3d`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ image: `data:image/png;base64,${photo.toString("base64")}`, response_format: "b64_json" }),
    });
    const body = (await answer.json()) as { data: { b64_json: string; content_type: string }[] };
    expect(body.data[0]?.content_type).toBe("model/gltf-binary");
    expect(Buffer.from(body.data[0]?.b64_json ?? "", "base64").subarray(0, 4).toString("latin1")).toBe("glTF");
  });

  it("refuses a body whose image is not an image, and an images model on the 3D route", async () => {
    const { url } = await gatewayFor([comfyModel("hunyuan3d", "hunyuan3d-2", []), comfyModel("flux", "flux1-schnell", [])]);
    const notImage = await fetch(`${url}/v1/llmgw/comfy/hunyuan3d`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ image: Buffer.from("hello").toString("base64") }) });
    expect(notImage.status).toBe(400);
    expect(((await notImage.json()) as { error: { message: string } }).error.message).toContain("not a PNG, JPEG or WebP image");
    const wrong = await fetch(`${url}/v1/llmgw/comfy/flux`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ image: photo.toString("base64") }) });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toContain("model flux serves images, not image-to-3d");
  });
});
