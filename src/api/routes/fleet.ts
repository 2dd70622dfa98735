import { pipeline } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { agentPaths, heartbeatRequestSchema, heartbeatResponseSchema, joinRequestSchema, joinResponseSchema, protocolVersion, serverIdentitySchema, type ReplicaProgress } from "../../protocol/agent-protocol.js";
import { startReplicaBodySchema, type FleetService } from "../../services/fleet-service.js";
import { redactOutputLine, redactStrings, secretValuesOf, type Audience } from "../../catalog/redact.js";
import type { NodeState, NodeView, ReplicaView } from "../../protocol/views.js";
import { engineNames } from "../../catalog/schema.js";
import { isPaged, isWholeList, matchesText, pageOf, pageQueryShape } from "../lists/list-query.js";
import { ListCache, maskedJson, sendList, weakEtag } from "../lists/list-answer.js";
import { jsonListBody } from "../lists/json-list-body.js";
import { PatchedListBody } from "../lists/patched-list-body.js";
import { KeptItems, keptItem, keptListBody, type KeptItem } from "../lists/kept-items.js";
import type { CatalogService } from "../../services/catalog-service.js";
import { requireActor } from "../access.js";
import { describeActor } from "../../catalog/actor.js";
import { maskedLines } from "../masked-lines.js";
import { flagSchema, isSet, logsQuerySchema } from "../../protocol/logs-query.js";
import { parseBody, parseQuery } from "../parse-body.js";

import { dryRunAnswer } from "../../protocol/dry-run.js";

const nameParams = z.object({ name: z.string() });
const idParams = z.object({ id: z.string() });
const nodeStates = ["ready", "settling", "lost"] as const satisfies readonly NodeState[];
const nodesQuery = z.strictObject({
  ...pageQueryShape,
  state: z.enum(nodeStates, { message: `one of ${nodeStates.join(", ")}` }).optional(),
  class: z.string().min(1).optional(),
  engine: z.enum(engineNames, { message: `one of ${engineNames.join(", ")}` }).optional(),
});
type NodesQuery = z.infer<typeof nodesQuery>;
const replicaStatesShown = ["pending", "fetching", "starting", "ready", "draining", "stopped", "failed", "lost"] as const satisfies readonly ReplicaView["state"][];
const replicasQuery = z.strictObject({
  ...pageQueryShape,
  model: z.string().optional(),
  node: z.string().optional(),
  state: z.enum(replicaStatesShown, { message: `one of ${replicaStatesShown.join(", ")}` }).optional(),
  engine: z.enum(engineNames, { message: `one of ${engineNames.join(", ")}` }).optional(),
});
type ReplicasQuery = z.infer<typeof replicasQuery>;
const stopQuery = z.object({ drain: flagSchema });

/** What a filter, a search or a page reads of a node, kept in place of its whole view. */
interface NodeFacets {
  readonly name: string;
  readonly state: NodeView["state"];
  readonly classes: readonly string[];
  readonly engines: NodeView["engines"];
  /** The texts a search looks in. */
  readonly text: readonly string[];
  readonly last_seen_at: string;
}

function nodeFacets(node: NodeView): NodeFacets {
  return {
    name: node.name,
    state: node.state,
    classes: node.gpus.map((gpu) => gpu.class),
    engines: node.engines,
    text: [node.name, node.hostname, node.address, ...Object.values(node.labels)],
    last_seen_at: node.last_seen_at,
  };
}

function nodeMatches(node: NodeFacets, query: NodesQuery): boolean {
  return (
    (query.state === undefined || node.state === query.state) &&
    (query.class === undefined || node.classes.includes(query.class)) &&
    (query.engine === undefined || node.engines.includes(query.engine)) &&
    matchesText(query.q, node.text)
  );
}

/** What a filter, a search or a page reads of a replica, kept in place of its whole view. */
interface ReplicaFacets {
  readonly id: string;
  readonly model: string;
  readonly node: string;
  readonly state: ReplicaView["state"];
  readonly engine: ReplicaView["engine"];
  readonly reason: string | null;
}

function replicaFacets(replica: ReplicaView): ReplicaFacets {
  return { id: replica.id, model: replica.model, node: replica.node, state: replica.state, engine: replica.engine, reason: replica.reason };
}

function replicaMatches(replica: ReplicaFacets, query: ReplicasQuery): boolean {
  return (
    (query.model === undefined || replica.model === query.model) &&
    (query.node === undefined || replica.node === query.node) &&
    (query.state === undefined || replica.state === query.state) &&
    (query.engine === undefined || replica.engine === query.engine) &&
    matchesText(query.q, [replica.id, replica.model, replica.node, replica.reason])
  );
}

const onlyPaging = (query: Record<string, unknown>) => Object.entries(query).every(([name, value]) => value === undefined || name === "limit" || name === "cursor");

/** Placeholder for a node's last_seen_at in its kept JSON: the one field that moves at every beat, put in at each answer. */
const lastSeenMark = "\u0000last_seen_at\u0000";

/** A node's JSON bytes, kept in two parts around its last_seen_at. */
interface NodeText {
  readonly facets: NodeFacets;
  readonly head: Buffer;
  readonly tail: Buffer;
}

function nodeText(view: NodeView, audience: Audience): NodeText {
  const text = maskedJson({ ...view, last_seen_at: lastSeenMark }, audience);
  const mark = JSON.stringify(lastSeenMark);
  const at = text.indexOf(mark);
  return { facets: nodeFacets(view), head: Buffer.from(text.slice(0, at)), tail: Buffer.from(text.slice(at + mark.length)) };
}

/**
 * Each node's text, built again only when its view (less last_seen_at, put
 * in at each answer) changed. The fleet's revision moves with every replica
 * write, a fetch's progress included, which leaves nearly every node as it
 * was: masking and encoding all 500 for the one that changed was most of a
 * /nodes read.
 */
function keptNodeTexts(views: readonly NodeView[], audience: Audience, kept: KeptItems<NodeText>): NodeText[] {
  const texts = kept.list(
    views,
    (view) => view.name,
    (view) => JSON.stringify({ ...view, last_seen_at: "" }),
    (view) => nodeText(view, audience),
  );
  // The kept text with this read's last_seen_at (the one field the signature leaves out) among its facets.
  return texts.map((text, index) => {
    const lastSeen = (views[index] as NodeView).last_seen_at;
    return text.facets.last_seen_at === lastSeen ? text : { ...text, facets: { ...text.facets, last_seen_at: lastSeen } };
  });
}

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

/** The replica list as kept: each item's facets and JSON, the answer's bytes, and the progress each replica had when the list was built whole. */
interface ReplicaList {
  readonly items: readonly KeptItem<ReplicaFacets>[];
  readonly body: Buffer;
  readonly progress: ReadonlyMap<string, ReplicaProgress | undefined>;
}

/** Nodes, replicas, join tokens, and the agents' own join and heartbeat. */
/** `serverId`: the identity this server presents to agents (server-identity.ts); absent in tests that build the app without a server key. */
export function registerFleetRoutes(app: FastifyInstance, fleet: FleetService, catalog: CatalogService, serverId?: string): void {
  // Agents authenticate with a join token or their node credential, checked by the fleet service.
  // Every answer carries the server's identity: an agent keys its credential to it, not to the URL it was given.
  const identity = serverId !== undefined ? { server_id: serverId } : {};
  app.post(agentPaths.join, { config: { access: "agent", api: { summary: "An agent joins with a join token (the agent protocol)", body: joinRequestSchema, response: joinResponseSchema } } }, async (request) => ({ ...(await fleet.join(request.body)), ...identity }));
  app.post(agentPaths.heartbeat, { config: { access: "agent", api: { summary: "An agent's heartbeat with its node credential (the agent protocol)", body: heartbeatRequestSchema, response: heartbeatResponseSchema } } }, async (request) => ({
    ...(await fleet.heartbeat(request.headers.authorization, request.body, request.log)),
    ...identity,
  }));
  if (serverId !== undefined) {
    // No credential asked: an agent asks it before sending its credential to this server at a new address, and sends none to another server.
    app.get(agentPaths.identity, { config: { access: "public", api: { summary: "The server's identity, which an agent checks before presenting its credential (the agent protocol)", response: serverIdentitySchema } } }, async () => ({ protocol: protocolVersion, server_id: serverId }));
  }

  app.post("/api/v1/node-tokens", { config: { access: "admin", dryRun: true, api: { summary: "A join token for agents", status: 201 } } }, async (request, reply) => {
    const actor = requireActor(request);
    // No token is made, so none is shown: the real call's value is the only one that joins a node.
    if (request.dryRun) return dryRunAnswer({ created_at: new Date().toISOString() }, [{ kind: "join-token-create", summary: "create a join token for new nodes (its value is shown once, by the real call)" }]);
    return reply.status(201).send(await fleet.createJoinToken(describeActor(actor)));
  });

  const nodesCache = new ListCache<readonly NodeText[]>();
  // The whole list's answer per kept list of texts: it goes with them when they are dropped.
  const wholeNodeBodies = new WeakMap<readonly NodeText[], PatchedListBody>();
  // One per audience, as the masking differs.
  const keptNodes = new Map<Audience, KeptItems<NodeText>>();
  app.get("/api/v1/nodes", { config: { access: "read", api: { summary: "Nodes, filtered and paged", query: nodesQuery } } }, async (request, reply) => {
    const query = parseQuery(nodesQuery, request.query);
    const { key: fleetKey, lastSeen } = await fleet.viewKey();
    // Who reads too: the text is masked for its audience.
    const key = `${fleetKey}|${request.audience}`;
    const texts = await nodesCache.get(request.audience, key, async () => {
      const kept = keptNodes.get(request.audience) ?? new KeptItems<NodeText>();
      keptNodes.set(request.audience, kept);
      return { value: keptNodeTexts(await fleet.listNodes(), request.audience, kept) };
    });
    const matching = texts.filter((text) => nodeMatches(text.facets, query));
    const page = isPaged(query) ? pageOf(matching, (text) => text.facets.name, query) : { items: matching, next_cursor: null };
    const seen = page.items.map((text) => lastSeen.get(text.facets.name) ?? text.facets.last_seen_at);
    const etag = weakEtag(key, JSON.stringify(query), seen.join(","));
    return sendList(request, reply, etag, () => {
      const values = seen.map((at) => JSON.stringify(at));
      if (!isWholeList(query)) {
        return jsonListBody("nodes", page.items.map((text, index) => [text.head, Buffer.from(values[index] as string), text.tail]), isPaged(query) ? page.next_cursor : undefined);
      }
      // The whole list, the read a console or ctl makes most: its kept answer with the last-seen times of now.
      let kept = wholeNodeBodies.get(texts);
      let body = kept?.patched(values);
      if (kept === undefined || body === undefined) {
        kept = new PatchedListBody("nodes", texts, values);
        wholeNodeBodies.set(texts, kept);
        body = kept.body;
      }
      const sent = kept.sending();
      reply.raw.once("finish", sent).once("close", sent);
      return body;
    });
  });
  app.get("/api/v1/nodes/:name", { config: { access: "read", api: { summary: "One node" } } }, async (request) => fleet.getNode(nameParams.parse(request.params).name));

  // Built whole when anything a replica view shows changes but a fetch's progress; when only progress moved
  // (every beat of a fetching replica), only the replicas whose progress moved are built again.
  const wholeReplicas = new ListCache<ReplicaList>();
  const replicasNow = new ListCache<ReplicaList>();
  // One per audience, as the masking differs.
  const keptReplicas = new Map<Audience, KeptItems<KeptItem<ReplicaFacets>>>();
  const shownFor = (view: ReplicaView, audience: Audience) => redactStrings(view, audience) as ReplicaView;
  const wholeReplicaList = async (audience: Audience): Promise<ReplicaList> => {
    const kept = keptReplicas.get(audience) ?? new KeptItems<KeptItem<ReplicaFacets>>();
    keptReplicas.set(audience, kept);
    const listed = await fleet.listReplicasWithProgress();
    // Masked once per change of a replica, so the pages and filtered answers cut from these views are masked too.
    // The view's own JSON is its signature: cheap next to the masking and encoding it saves.
    const shown = await shownReplicas(catalog, listed.views);
    const items = kept.list(shown, (replica) => replica.id, (replica) => JSON.stringify(replica), (replica) => keptItem(shownFor(replica, audience), replicaFacets));
    return { items, body: keptListBody("replicas", items), progress: listed.progress };
  };
  const withProgressNow = async (whole: ReplicaList, audience: Audience): Promise<ReplicaList> => {
    const now = await fleet.replicaProgressNow();
    const ids = new Set([...now.keys(), ...[...whole.progress].filter(([, progress]) => progress !== undefined).map(([id]) => id)]);
    const moved = [...ids].filter((id) => !isDeepStrictEqual(whole.progress.get(id), now.get(id)));
    if (moved.length === 0) return whole;
    const rebuilt = new Map((await shownReplicas(catalog, await fleet.replicasById(moved))).map((view) => [view.id, keptItem(shownFor(view, audience), replicaFacets)]));
    // A replica removed meanwhile keeps its item here: its removal raised the fleet's revision, so the next read builds whole.
    const items = whole.items.map((item) => rebuilt.get(item.facets.id) ?? item);
    return { items, body: jsonListBody("replicas", items.map((item) => item.json)), progress: whole.progress };
  };
  app.get("/api/v1/replicas", { config: { access: "read", api: { summary: "Replicas, filtered and paged", query: replicasQuery } } }, async (request, reply) => {
    const query = parseQuery(replicasQuery, request.query);
    // The catalog's revision too: a failed replica's reason is masked with its model's secrets as the catalog has them.
    const revision = (await catalog.snapshot()).revision;
    const fleetKey = await fleet.viewKey();
    const wholeKey = `${revision}|${fleetKey.key}|${request.audience}`;
    const key = `${wholeKey}|${fleetKey.progressRevision}`;
    const built = await replicasNow.get(request.audience, key, async () => {
      const whole = await wholeReplicas.get(request.audience, wholeKey, async () => ({ value: await wholeReplicaList(request.audience) }));
      return { value: await withProgressNow(whole, request.audience) };
    });
    const etag = weakEtag(key, JSON.stringify(query));
    if (isWholeList(query)) return sendList(request, reply, etag, () => built.body);
    return sendList(request, reply, etag, () => {
      const matching = onlyPaging(query) ? built.items : built.items.filter((item) => replicaMatches(item.facets, query));
      if (!isPaged(query)) return jsonListBody("replicas", matching.map((item) => item.json));
      const page = pageOf(matching, (item) => item.facets.id, query);
      return jsonListBody("replicas", page.items.map((item) => item.json), page.next_cursor);
    });
  });
  app.get("/api/v1/replicas/:id", { config: { access: "read", api: { summary: "One replica" } } }, async (request) => shownReplica(catalog, await fleet.getReplica(idParams.parse(request.params).id)));

  app.post("/api/v1/replicas", { config: { access: "admin", api: { summary: "Start one replica by hand on a node", body: startReplicaBodySchema, status: 201 } } }, async (request, reply) => {
    requireActor(request);
    return reply.status(201).send(await shownReplica(catalog, await fleet.startReplica(parseBody(startReplicaBodySchema, request.body))));
  });

  app.delete("/api/v1/replicas/:id", { config: { access: "admin", dryRun: true, api: { summary: "Stop a replica (drained first with drain=1)", query: stopQuery, status: 202 } } }, async (request, reply) => {
    const drain = isSet(parseQuery(stopQuery, request.query).drain);
    if (request.dryRun) {
      const replica = await shownReplica(catalog, await fleet.getReplica(idParams.parse(request.params).id));
      const how = drain ? "drains its requests in flight, then stops" : "stops now";
      return dryRunAnswer(replica, [{ kind: "replica-stop", summary: `replica ${replica.id} of ${replica.model} on ${replica.node}, cards ${replica.gpus.join(",") || "none (CPU)"}, ${how}`, model: replica.model, replica: replica.id, node: replica.node, cards: [...replica.gpus] }]);
    }
    return reply.status(202).send(await shownReplica(catalog, await fleet.stopReplica(idParams.parse(request.params).id, drain)));
  });

  app.get("/api/v1/replicas/:id/logs", { config: { access: "read", api: { summary: "The engine's log from its node, streamed while following", query: logsQuerySchema, produces: "text/plain" } } }, async (request, reply) => {
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
