import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { Gateway } from "./gateway.js";
import type { GatewayPolicy } from "../policy/gateway-policy.js";
import { openPolicy } from "../policy/open-policy.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { routingModel } from "../testing/routing-model.js";

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function serve(policy: GatewayPolicy): Promise<string> {
  const gateway = new Gateway({ policy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  gateway.swap({ revision: 1, aliases: {}, models: [routingModel("chat-7b"), routingModel("secret-70b")] });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  closers.push(() => app.close());
  return url;
}

async function ask(url: string, model: string): Promise<{ status: number; message: string }> {
  const answer = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: answer.status, message: ((await answer.json()) as { error: { message: string } }).error.message };
}

describe("a model name the gateway does not know", () => {
  it("is answered 404 with the name it was likely meant to be", async () => {
    const url = await serve(openPolicy);
    expect(await ask(url, "chat7b")).toEqual({ status: 404, message: expect.stringContaining('no model named chat7b at this gateway (did you mean "chat-7b"?)') });
    expect((await ask(url, "ghost")).message).not.toContain("did you mean");
  });

  it("suggests only a name the caller's key may use, so a typo reveals no other model", async () => {
    const scoped: GatewayPolicy = { ...openPolicy, authenticate: () => ({ key: "team", allowedModels: ["chat-7b"] }) };
    const url = await serve(scoped);
    // secret-70b is one edit away, and this key may not use it.
    expect((await ask(url, "secret-7b")).message).not.toContain("did you mean");
    expect((await ask(url, "chat-7")).message).toContain('(did you mean "chat-7b"?)');
  });
});
