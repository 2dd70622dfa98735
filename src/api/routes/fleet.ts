import { pipeline } from "node:stream";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { agentPaths } from "../../protocol/agent-protocol.js";
import { startReplicaBodySchema, type FleetService } from "../../services/fleet-service.js";
import { redactOutputLine, secretValuesOf } from "../../catalog/redact.js";
import type { ReplicaView } from "../../protocol/views.js";
import type { CatalogService } from "../../services/catalog-service.js";
import { requireActor } from "../access.js";
import { describeActor } from "../../catalog/actor.js";
import { maskedLines } from "../masked-lines.js";
import { flagSchema, isSet, logsQuerySchema } from "../../protocol/logs-query.js";
import { parseBody, parseQuery } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
const idParams = z.object({ id: z.string() });
const replicasQuery = z.object({ model: z.string().optional(), node: z.string().optional() });

/** The secret values a replica runs with, from its model's profile as the catalog has it now; none once the model is gone. */
async function profileSecretValues(catalog: CatalogService, modelName: string, profileName: string): Promise<string[]> {
  const model = await catalog.get(modelName).catch(() => undefined);
  const profile = model?.profiles.find((candidate) => candidate.name === profileName);
  return profile ? secretValuesOf(profile, process.env) : [];
}

/**
 * Replicas as they may be shown: a failed one's reason carries its engine's
 * log tail, and engines echo their settings, so the reason is masked like the
 * log itself.
 */
async function shownReplicas(catalog: CatalogService, replicas: readonly ReplicaView[]): Promise<ReplicaView[]> {
  const secretsByProfile = new Map<string, Promise<string[]>>();
  return await Promise.all(
    replicas.map(async (replica) => {
      if (replica.reason === null) return replica;
      const key = JSON.stringify([replica.model, replica.profile]);
      const secrets = secretsByProfile.get(key) ?? profileSecretValues(catalog, replica.model, replica.profile);
      secretsByProfile.set(key, secrets);
      return { ...replica, reason: redactOutputLine(replica.reason, await secrets) };
    }),
  );
}

const shownReplica = async (catalog: CatalogService, replica: ReplicaView): Promise<ReplicaView> => (await shownReplicas(catalog, [replica]))[0] as ReplicaView;

/** Nodes, replicas, join tokens, and the agents' own join and heartbeat. */
export function registerFleetRoutes(app: FastifyInstance, fleet: FleetService, catalog: CatalogService): void {
  // Agents authenticate with a join token or their node credential, checked by the fleet service.
  app.post(agentPaths.join, { config: { access: "agent" } }, async (request) => fleet.join(request.body));
  app.post(agentPaths.heartbeat, { config: { access: "agent" } }, async (request) => fleet.heartbeat(request.headers.authorization, request.body, request.log));

  app.post("/api/v1/node-tokens", { config: { access: "admin" } }, async (request, reply) => {
    const actor = requireActor(request);
    return reply.status(201).send(await fleet.createJoinToken(describeActor(actor)));
  });

  app.get("/api/v1/nodes", { config: { access: "read" } }, async () => ({ nodes: await fleet.listNodes() }));
  app.get("/api/v1/nodes/:name", { config: { access: "read" } }, async (request) => fleet.getNode(nameParams.parse(request.params).name));

  app.get("/api/v1/replicas", { config: { access: "read" } }, async (request) => ({ replicas: await shownReplicas(catalog, await fleet.listReplicas(parseQuery(replicasQuery, request.query))) }));
  app.get("/api/v1/replicas/:id", { config: { access: "read" } }, async (request) => shownReplica(catalog, await fleet.getReplica(idParams.parse(request.params).id)));

  app.post("/api/v1/replicas", { config: { access: "admin" } }, async (request, reply) => {
    requireActor(request);
    return reply.status(201).send(await shownReplica(catalog, await fleet.startReplica(parseBody(startReplicaBodySchema, request.body))));
  });

  app.delete("/api/v1/replicas/:id", { config: { access: "admin" } }, async (request, reply) => {
    const drain = isSet(parseQuery(z.object({ drain: flagSchema }), request.query).drain);
    return reply.status(202).send(await shownReplica(catalog, await fleet.stopReplica(idParams.parse(request.params).id, drain)));
  });

  app.get("/api/v1/replicas/:id/logs", { config: { access: "read" } }, async (request, reply) => {
    const query = parseQuery(logsQuerySchema, request.query);
    const abort = new AbortController();
    // A client that stops following must not leave the stream to the agent open.
    request.raw.on("close", () => abort.abort());
    const id = idParams.parse(request.params).id;
    // Engines echo their settings (vLLM logs its api_key among its args): the log goes out with the
    // replica's own secret values and every URL password masked, to read tokens and admins alike.
    const replica = await fleet.getReplica(id);
    const masked = maskedLines(await profileSecretValues(catalog, replica.model, replica.profile));
    const stream = await fleet.replicaLogs(id, query.tail, isSet(query.follow), abort.signal);
    pipeline(stream, masked, () => undefined);
    return reply.type("text/plain; charset=utf-8").send(masked);
  });
}
