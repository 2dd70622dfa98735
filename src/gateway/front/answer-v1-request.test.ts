import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { closedPolicy } from "../policy/closed-policy.js";
import { Gateway } from "../request/gateway.js";
import type { GatewayPolicy } from "../policy/gateway-policy.js";
import { gatewayServerFactory } from "./gateway-server-factory.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "./register-gateway-routes.js";

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A server as `llmgw server` builds it: /v1 before fastify, the rest on fastify. */
async function serve(policy: GatewayPolicy): Promise<string> {
  const gateway = new Gateway({ policy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  gateway.swap({ revision: 1, aliases: {}, models: [] });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  app.get("/healthz", async () => ({ status: "ok" }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  closers.push(() => app.close());
  return url;
}

interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

describe("/v1 answered in front of fastify", () => {
  it("lists models with a trailing slash or a query, and carries the client's request id", async () => {
    const url = await serve(openPolicy);
    for (const path of ["/v1/models", "/v1/models/", "/v1/models?limit=5"]) {
      const answer = await fetch(`${url}${path}`, { headers: { "x-request-id": "trace-1" } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-request-id")).toBe("trace-1");
      expect(await answer.json()).toEqual({ object: "list", data: [] });
    }
  });

  it("refuses /v1/models without a valid key in OpenAI's shape", async () => {
    const url = await serve(closedPolicy);
    const answer = await fetch(`${url}/v1/models`);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("x-request-id")).toBeTruthy();
    expect(((await answer.json()) as ErrorBody).error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
  });

  it("answers a path or method it does not serve 404 route_not_found, naming what it serves", async () => {
    const url = await serve(openPolicy);
    for (const [method, path] of [["POST", "/v1/audio/speech"], ["GET", "/v1/chat/completions"], ["GET", "/v1"]] as const) {
      const answer = await fetch(`${url}${path}`, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(answer.status).toBe(404);
      const body = (await answer.json()) as ErrorBody;
      expect(body.error.code).toBe("route_not_found");
      expect(body.error.message).toContain("POST /v1/chat/completions");
    }
  });

  it("hands every other path to fastify, on the same port", async () => {
    const url = await serve(openPolicy);
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    // A path that only starts like /v1 is not the gateway's.
    const lookalike = await fetch(`${url}/v1models`);
    expect(lookalike.status).toBe(404);
    expect(((await lookalike.json()) as Partial<ErrorBody>).error?.code).not.toBe("route_not_found");
  });

  it("refuses a body that is not JSON with 400 invalid_input", async () => {
    const url = await serve(openPolicy);
    const answer = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{model" });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as ErrorBody).error).toMatchObject({ type: "invalid_request_error", code: "invalid_input", message: expect.stringContaining("not JSON") });
  });

  it("refuses a body over 32 MiB with 413, whether its length is declared or it comes chunked", async () => {
    const url = await serve(openPolicy);
    const big = Buffer.alloc(33 * 1024 * 1024, 32);
    const declared = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as ErrorBody).error.code).toBe("body_too_large");
    const chunked = await fetch(`${url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let offset = 0; offset < big.length; offset += 1024 * 1024) controller.enqueue(big.subarray(offset, offset + 1024 * 1024));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as ErrorBody).error.code).toBe("body_too_large");
  });
});
