import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { agentPaths } from "../../protocol/agent-protocol.js";
import { startReplicaBodySchema, type FleetService } from "../../services/fleet-service.js";
import { requireActor } from "../access.js";
import { flagSchema, isSet, logsQuerySchema } from "../../protocol/logs-query.js";
import { parseBody, parseQuery } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
const idParams = z.object({ id: z.string() });
const replicasQuery = z.object({ model: z.string().optional(), node: z.string().optional() });

/** Nodes, replicas, join tokens, and the agents' own join and heartbeat. */
export function registerFleetRoutes(app: FastifyInstance, fleet: FleetService): void {
  // Agents authenticate with a join token or their node credential, checked by the fleet service.
  app.post(agentPaths.join, { config: { access: "agent" } }, async (request) => fleet.join(request.body));
  app.post(agentPaths.heartbeat, { config: { access: "agent" } }, async (request) => fleet.heartbeat(request.headers.authorization, request.body, request.log));

  app.post("/api/v1/node-tokens", { config: { access: "admin" } }, async (request, reply) => {
    const actor = requireActor(request);
    return reply.status(201).send(await fleet.createJoinToken(actor.user ? `${actor.token} (${actor.user})` : actor.token));
  });

  app.get("/api/v1/nodes", { config: { access: "read" } }, async () => ({ nodes: await fleet.listNodes() }));
  app.get("/api/v1/nodes/:name", { config: { access: "read" } }, async (request) => fleet.getNode(nameParams.parse(request.params).name));

  app.get("/api/v1/replicas", { config: { access: "read" } }, async (request) => ({ replicas: await fleet.listReplicas(parseQuery(replicasQuery, request.query)) }));
  app.get("/api/v1/replicas/:id", { config: { access: "read" } }, async (request) => fleet.getReplica(idParams.parse(request.params).id));

  app.post("/api/v1/replicas", { config: { access: "admin" } }, async (request, reply) => {
    requireActor(request);
    return reply.status(201).send(await fleet.startReplica(parseBody(startReplicaBodySchema, request.body)));
  });

  app.delete("/api/v1/replicas/:id", { config: { access: "admin" } }, async (request, reply) => {
    const drain = isSet(parseQuery(z.object({ drain: flagSchema }), request.query).drain);
    return reply.status(202).send(await fleet.stopReplica(idParams.parse(request.params).id, drain));
  });

  app.get("/api/v1/replicas/:id/logs", { config: { access: "read" } }, async (request, reply) => {
    const query = parseQuery(logsQuerySchema, request.query);
    const abort = new AbortController();
    // A client that stops following must not leave the stream to the agent open.
    request.raw.on("close", () => abort.abort());
    const stream = await fleet.replicaLogs(idParams.parse(request.params).id, query.tail, isSet(query.follow), abort.signal);
    stream.on("error", () => undefined);
    return reply.type("text/plain; charset=utf-8").send(stream);
  });
}
