import { open, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { httpsServerFactory, type CertificateLog, type TlsFiles } from "../net/index.js";
import Fastify, { type FastifyInstance } from "fastify";
import { z } from "zod";
import {
  flagSchema,
  isSet,
  logsQuerySchema,
  protocolRefusal,
  protocolVersion,
  replicaIdSchema,
  runtimeAdapterLoadSchema,
  runtimeAdapterUnloadSchema,
  startFetchRequestSchema,
  startReplicaRequestSchema,
  terminalReplicaStates,
} from "../protocol/for-agent.js";
import { bearerToken, hashToken, sameSecret } from "../auth/index.js";
import { answerClientError, answerFrameworkError, installErrorHandling, maxParamLength } from "../http/index.js";
import { parseWithSchema } from "../catalog/for-agent.js";
import { DomainError } from "../errors/light.js";
import { readLogTail } from "./replica-log.js";
import type { ReplicaSupervisor } from "./replica-supervisor.js";
import type { WeightsPuller } from "./weights-puller.js";

/**
 * The agent's control API, called by the server with the control secret it gave at join.
 * Domain errors map to statuses with src/api's one table, as the admin API
 * does: the same `{error:{code,message,hint}}` body and status on both.
 */

export interface ControlApiOptions {
  readonly supervisor: ReplicaSupervisor;
  /** Fetches weights into the cache ahead of any replica (`ctl model pull`). */
  readonly puller: WeightsPuller;
  readonly nodeName: string;
  /** Undefined until the agent has joined: nothing is accepted before. */
  readonly credential: () => string | undefined;
  /** sha256 of the server's control secret, from the join; undefined when the server sent none (an older release). */
  readonly controlSecretHash: () => string | undefined;
  /** Serve HTTPS with this certificate, swapped for a renewed one without a restart. */
  readonly tls?: TlsFiles | undefined;
  readonly certificateLog?: CertificateLog | undefined;
  /** Called after a change the server should hear about soon. */
  readonly onChange: () => void;
}

const stopQuerySchema = z.object({ drain: flagSchema });

function invalid(message: string): DomainError {
  return new DomainError("invalid_input", message, "Send the body the agent protocol defines (src/protocol/agent-protocol.ts).");
}

/**
 * Whether the caller is the server this agent joined. With a control secret
 * only that secret counts, compared by hash (the agent keeps no copy): the
 * node credential, which the agent's own files hold, does not command it.
 */
function presentsServerSecret(given: string, controlSecretHash: string | undefined, credential: string | undefined): boolean {
  if (given === "") return false;
  if (controlSecretHash !== undefined) return sameSecret(hashToken(given), controlSecretHash);
  // Joined to a server older than control secrets, which presents the node credential.
  return credential !== undefined && sameSecret(given, credential);
}

export function buildControlApi(options: ControlApiOptions): FastifyInstance {
  const app = Fastify({
    ...(options.tls ? { serverFactory: httpsServerFactory(options.tls, options.certificateLog ?? { renewed: () => undefined, failed: () => undefined }) } : {}),
    logger: false,
    bodyLimit: 1024 * 1024,
    routerOptions: { maxParamLength },
    // The router's and Node's parser's own refusals in the one error shape, as on the server.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  });
  const { supervisor, nodeName } = options;

  installErrorHandling(app, {
    speaker: `agent ${nodeName}`,
    routesHint: "The agent control API lives under /agent/v1.",
    logHint: "See the agent's log.",
  });

  app.addHook("onRequest", async (request) => {
    const credential = options.credential();
    const given = bearerToken(request.headers.authorization) ?? "";
    if (credential === undefined || !presentsServerSecret(given, options.controlSecretHash(), credential)) {
      throw new DomainError(
        "unauthorized",
        credential === undefined ? `agent ${nodeName} has not joined a server yet` : `agent ${nodeName} refused the request: no control secret, or not the one its server gave it`,
        "The server calls agents with the control secret it gave at join; check that this agent joined the server calling it, and that servers sharing a database share DATA_DIR/server-key.",
      );
    }
  });

  app.post("/agent/v1/replicas", async (request, reply) => {
    const refusal = protocolRefusal(request.body, { side: "agent", place: `agent ${nodeName}`, hint: "Run the server and agents of the same llmgw release." });
    if (refusal) throw refusal;
    const parsed = parseWithSchema(startReplicaRequestSchema, request.body ?? {}, { label: `start replica on ${nodeName}` });
    const status = await supervisor.start(parsed.replica);
    options.onChange();
    return reply.status(202).send({ protocol: protocolVersion, replica: status });
  });

  app.get("/agent/v1/replicas", async () => ({ protocol: protocolVersion, replicas: supervisor.list() }));

  app.post("/agent/v1/fetches", async (request, reply) => {
    const refusal = protocolRefusal(request.body, { side: "agent", place: `agent ${nodeName}`, hint: "Run the server and agents of the same llmgw release." });
    if (refusal) throw refusal;
    const parsed = parseWithSchema(startFetchRequestSchema, request.body ?? {}, { label: `fetch weights on ${nodeName}` });
    const fetch = await options.puller.pull(parsed.source);
    return reply.status(202).send({ protocol: protocolVersion, fetch });
  });

  app.get("/agent/v1/fetches", async () => ({ protocol: protocolVersion, fetches: options.puller.list() }));

  // Adapters loaded into and unloaded from a running engine, where the engine allows it.
  app.post<{ Params: { id: string } }>("/agent/v1/replicas/:id/adapters", async (request) => {
    const refusal = protocolRefusal(request.body, { side: "agent", place: `agent ${nodeName}`, hint: "Run the server and agents of the same llmgw release." });
    if (refusal) throw refusal;
    const parsed = parseWithSchema(runtimeAdapterLoadSchema, request.body ?? {}, { label: `load adapter on ${nodeName}` });
    return { protocol: protocolVersion, replica: await supervisor.changeAdapter(request.params.id, { action: "load", adapter: parsed.adapter }, parsed.api_key) };
  });

  app.post<{ Params: { id: string; adapter: string } }>("/agent/v1/replicas/:id/adapters/:adapter/unload", async (request) => {
    const refusal = protocolRefusal(request.body, { side: "agent", place: `agent ${nodeName}`, hint: "Run the server and agents of the same llmgw release." });
    if (refusal) throw refusal;
    const parsed = parseWithSchema(runtimeAdapterUnloadSchema, request.body ?? {}, { label: `unload adapter on ${nodeName}` });
    return { protocol: protocolVersion, replica: await supervisor.changeAdapter(request.params.id, { action: "unload", name: request.params.adapter }, parsed.api_key) };
  });

  app.get<{ Params: { id: string } }>("/agent/v1/replicas/:id", async (request) => {
    const status = supervisor.get(request.params.id);
    if (!status) throw new DomainError("replica_not_found", `no replica ${request.params.id} on node ${nodeName}`, "List the node's replicas with GET /agent/v1/replicas.");
    return { protocol: protocolVersion, replica: status };
  });

  app.delete<{ Params: { id: string } }>("/agent/v1/replicas/:id", async (request, reply) => {
    const query = stopQuerySchema.safeParse(request.query);
    if (!query.success) throw invalid("drain is 1 or 0");
    const drain = isSet(query.data.drain);
    const status = supervisor.stop(request.params.id, drain);
    options.onChange();
    return reply.status(202).send({ protocol: protocolVersion, replica: status });
  });

  app.get<{ Params: { id: string } }>("/agent/v1/replicas/:id/logs", async (request, reply) => {
    const id = replicaIdSchema.safeParse(request.params.id);
    if (!id.success) throw invalid(`replica id: ${id.error.issues[0]?.message ?? "invalid"}`);
    const query = logsQuerySchema.safeParse(request.query);
    if (!query.success) throw invalid("tail is a whole number of lines; follow is 1 or 0");
    const logPath = supervisor.logPath(id.data);
    const exists = await stat(logPath).then(
      () => true,
      () => false,
    );
    if (!exists && !supervisor.has(id.data)) {
      throw new DomainError("replica_not_found", `no replica ${id.data} on node ${nodeName}, and no log for it`, "List the node's replicas with `llmgw ctl replicas`.");
    }
    const lines = await readLogTail(logPath, query.data.tail);
    const head = lines.length > 0 ? `${lines.join("\n")}\n` : "";
    void reply.type("text/plain; charset=utf-8");
    if (!isSet(query.data.follow)) return reply.send(head);
    let closed = false;
    request.raw.on("close", () => {
      closed = true;
    });
    const follow = async function* (): AsyncGenerator<string> {
      yield head;
      let offset = exists ? (await stat(logPath)).size : 0;
      // Bounded by the connection: the loop ends when the client goes, or when the
      // replica has ended and its last lines were sent.
      while (!closed) {
        const size = await stat(logPath).then(
          (info) => info.size,
          () => 0,
        );
        if (size < offset) offset = 0; // rotated by copy-and-truncate: the live file starts again
        if (size > offset) {
          const handle = await open(logPath, "r");
          try {
            const buffer = Buffer.alloc(Math.min(size - offset, 1024 * 1024));
            const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
            offset += bytesRead;
            yield buffer.subarray(0, bytesRead).toString("utf8");
          } finally {
            await handle.close();
          }
          continue;
        }
        const status = supervisor.get(id.data);
        if (!status || terminalReplicaStates.includes(status.state)) return;
        await sleep(250);
      }
    };
    return reply.send(Readable.from(follow()));
  });

  return app;
}
