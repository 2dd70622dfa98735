import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import type { ServerLimits } from "../../catalog/server-limits.js";
import { answerClientError } from "../../http/error-handler.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { openPolicy } from "../policy/open-policy.js";
import { Gateway } from "../request/gateway.js";
import { routingModel } from "./routing-model.js";

/** A whole chat completion as an engine answers one: "ok", one token each way. */
export const echoChatCompletion = JSON.stringify({
  id: "x",
  object: "chat.completion",
  created: 1,
  model: "echo",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/**
 * The gateway's front on a port of its own, open, with one model "echo"
 * routed to an engine that records each body it was sent (as latin1, byte
 * for byte) and answers it with `echoChatCompletion`: for the tests that send
 * the front raw bytes and check what, if anything, reached the engine.
 */
export async function startEchoFront(limits: ServerLimits): Promise<{ readonly port: number; readonly engineSaw: string[]; close(): Promise<void> }> {
  const engineSaw: string[] = [];
  const engine = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      engineSaw.push(Buffer.concat(parts).toString("latin1"));
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(echoChatCompletion) }).end(echoChatCompletion);
    });
  });
  await new Promise<void>((resolve) => engine.listen(0, "127.0.0.1", resolve));
  const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  const base = `http://127.0.0.1:${(engine.address() as AddressInfo).port}/v1`;
  gateway.swap({ revision: 1, aliases: {}, models: [routingModel("echo", { engine: null, external: { base_url: base, api_key_env: null, model: null } })] });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }, undefined, limits), clientErrorHandler: answerClientError });
  registerGatewayRoutes(app, gateway);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    port: (app.server.address() as AddressInfo).port,
    engineSaw,
    close: async () => {
      await app.close();
      engine.closeAllConnections();
      await new Promise<void>((resolve) => engine.close(() => resolve()));
    },
  };
}
