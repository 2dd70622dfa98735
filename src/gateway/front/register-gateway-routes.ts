import type { FastifyInstance } from "fastify";
import type { Gateway } from "../request/gateway.js";

/**
 * The gateway's parts that live on a fastify app: its Prometheus metrics at
 * /metrics, and its place in the app's shutdown. /v1 itself is answered
 * before fastify, on the same server (gatewayServerFactory): an app built
 * without that factory has no /v1. `allMetrics` gives the metrics of every
 * worker of one gateway, when this process is one of them.
 */
export function registerGatewayRoutes(app: FastifyInstance, gateway: Gateway, allMetrics?: () => Promise<string>): void {
  // Closing: queued requests are answered at once, those being answered finish, then the pools close.
  let gatewayClosed: Promise<void> | undefined;
  app.addHook("preClose", async () => {
    gatewayClosed = gateway.close();
  });
  app.addHook("onClose", async () => {
    await gatewayClosed;
  });
  app.get("/metrics", { config: { access: "public" } }, async (_request, reply) => {
    // A worker of several answers for all of them (allMetrics); a single gateway for itself.
    const text = allMetrics ? await allMetrics() : await gateway.metrics.registry.metrics();
    return reply.type(gateway.metrics.registry.contentType).send(text);
  });
}
