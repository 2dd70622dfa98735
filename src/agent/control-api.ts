import { open, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify, { type FastifyInstance } from "fastify";
import { z } from "zod";
import { statusForCode } from "../protocol/http-status.js";
import { flagSchema, isSet, logsQuerySchema } from "../api/logs-query.js";
import { sameSecret } from "../api/tokens.js";
import { maxParamLength } from "../api/router-limits.js";
import { DomainError, isDomainError } from "../errors/domain-error.js";
import { protocolOf, protocolVersion, replicaIdSchema, startReplicaRequestSchema, terminalReplicaStates, versionMismatchMessage } from "../protocol/agent-protocol.js";
import { readLogTail } from "./replica-log.js";
import type { ReplicaSupervisor } from "./replica-supervisor.js";

/**
 * The agent's control API, called by the server with the node credential.
 * Domain errors map to statuses with src/api's one table, as the admin API
 * does: the same `{error:{code,message,hint}}` body and status on both.
 */

export interface ControlApiOptions {
  readonly supervisor: ReplicaSupervisor;
  readonly nodeName: string;
  /** Undefined until the agent has joined: nothing is accepted before. */
  readonly credential: () => string | undefined;
  /** Called after a change the server should hear about soon. */
  readonly onChange: () => void;
}

const stopQuerySchema = z.object({ drain: flagSchema });

function invalid(message: string): DomainError {
  return new DomainError("invalid_input", message, "Send the body the agent protocol defines (src/protocol/agent-protocol.ts).");
}

export function buildControlApi(options: ControlApiOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024, routerOptions: { maxParamLength } });
  const { supervisor, nodeName } = options;

  app.setErrorHandler((error, _request, reply) => {
    if (isDomainError(error)) {
      void reply.status(statusForCode[error.code]).send(error.toBody());
      return;
    }
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    const body = new DomainError(status < 500 ? "invalid_input" : "internal", `agent ${nodeName}: ${error instanceof Error ? error.message : String(error)}`, "See the agent's log.").toBody();
    void reply.status(status).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .send(new DomainError("route_not_found", `agent ${nodeName} has no route ${request.method} ${request.url}`, "The agent control API lives under /agent/v1.").toBody());
  });

  app.addHook("onRequest", async (request) => {
    const expected = options.credential();
    const header = request.headers.authorization ?? "";
    const given = header.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
    if (expected === undefined || given === "" || !sameSecret(given, expected)) {
      throw new DomainError(
        "unauthorized",
        expected === undefined ? `agent ${nodeName} has not joined a server yet` : `agent ${nodeName} refused the request: no node credential, or not this node's`,
        "The server calls agents with the credential it issued at join; check that this agent joined the server calling it.",
      );
    }
  });

  app.post("/agent/v1/replicas", async (request, reply) => {
    const theirs = protocolOf(request.body);
    if (theirs !== protocolVersion) {
      throw new DomainError("version_unsupported", versionMismatchMessage("agent", theirs, `agent ${nodeName}`), "Run the server and agents of the same llmgw release.");
    }
    const parsed = startReplicaRequestSchema.safeParse(request.body);
    if (!parsed.success) throw invalid(`start replica on ${nodeName}: ${parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")}`);
    const status = supervisor.start(parsed.data.replica);
    options.onChange();
    return reply.status(202).send({ protocol: protocolVersion, replica: status });
  });

  app.get("/agent/v1/replicas", async () => ({ protocol: protocolVersion, replicas: supervisor.list() }));

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
