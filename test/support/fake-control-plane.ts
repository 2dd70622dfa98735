import { createHash, randomBytes } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import { request } from "undici";
import {
  agentPaths,
  heartbeatRequestSchema,
  joinRequestSchema,
  type HeartbeatRequest,
  type JoinRequest,
  type ReplicaSpecInput,
} from "../../src/protocol/agent-protocol.js";

/**
 * The server side of the agent protocol, as small as the agent tests need:
 * join tokens, credentials, heartbeats recorded, and calls to an agent's
 * control API. `speaks` sets the protocol version it claims.
 */
export class FakeControlPlane {
  readonly joins: JoinRequest[] = [];
  readonly heartbeats: HeartbeatRequest[] = [];
  readonly credentials = new Map<string, string>();
  /** The secret it presents to each agent's control API, given at join. */
  readonly controlSecrets = new Map<string, string>();
  /** False: acts as a server older than control secrets, which gives none and presents the credential. */
  givesControlSecrets = true;
  readonly addresses = new Map<string, string>();
  /** The identity it presents, as a server derives it from its key; undefined: acts as a server older than identities. */
  serverId: string | undefined = randomBytes(16).toString("hex");
  /** Every Authorization header it was sent, on any route: what would have leaked to it. */
  readonly presented: string[] = [];
  speaks = 1;
  private app: FastifyInstance | undefined;
  url = "";

  constructor(readonly joinToken = "join-secret-0123456789") {}

  async start(port = 0): Promise<void> {
    const app = Fastify({ logger: false });
    app.addHook("onRequest", async (incoming) => {
      if (incoming.headers.authorization !== undefined) this.presented.push(incoming.headers.authorization);
    });
    app.get(agentPaths.identity, async (_incoming, reply) => (this.serverId === undefined ? reply.status(404).send({ error: { code: "not_found", message: "no such route" } }) : { protocol: this.speaks, server_id: this.serverId }));
    app.post(agentPaths.join, async (incoming, reply) => {
      const theirs = (incoming.body as { protocol?: unknown } | null)?.protocol;
      if (theirs !== this.speaks) {
        return reply.status(426).send({
          error: {
            code: "version_unsupported",
            message: `this server speaks agent protocol ${this.speaks}; the agent sent protocol ${JSON.stringify(theirs)}`,
            hint: "Run an agent of the server's release.",
          },
        });
      }
      const body = joinRequestSchema.parse(incoming.body);
      if (body.join_token !== this.joinToken) {
        return reply.status(401).send({ error: { code: "join_refused", message: "unknown join token", hint: "Get one with `llmgw ctl node token`." } });
      }
      const credential = randomBytes(24).toString("hex");
      const controlSecret = `control-${randomBytes(24).toString("hex")}`;
      this.joins.push(body);
      this.credentials.set(body.name, credential);
      if (this.givesControlSecrets) this.controlSecrets.set(body.name, controlSecret);
      else this.controlSecrets.delete(body.name);
      this.addresses.set(body.name, body.address);
      return { protocol: this.speaks, node: body.name, credential, ...(this.givesControlSecrets ? { control_secret: controlSecret } : {}), heartbeat_interval_ms: 300, ...this.identity() };
    });
    app.post(agentPaths.heartbeat, async (incoming, reply) => {
      const body = heartbeatRequestSchema.parse(incoming.body);
      if (incoming.headers.authorization !== `Bearer ${this.credentials.get(body.name) ?? "none"}`) {
        return reply.status(401).send({ error: { code: "unauthorized", message: "unknown credential", hint: "join again" } });
      }
      this.heartbeats.push(body);
      this.addresses.set(body.name, body.address);
      // As the server does: the secret goes back when the agent's hash of it is missing or stale.
      const controlSecret = this.controlSecrets.get(body.name);
      const stale = controlSecret !== undefined && body.control_secret_hash !== createHash("sha256").update(controlSecret).digest("hex");
      return { protocol: this.speaks, ...(stale ? { control_secret: controlSecret } : {}), ...this.identity() };
    });
    await app.listen({ host: "127.0.0.1", port });
    this.app = app;
    this.url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  }

  private identity(): { server_id?: string } {
    return this.serverId !== undefined ? { server_id: this.serverId } : {};
  }

  /** A new control secret for the node, as after the server key was restored: the agent learns it at its next heartbeat. */
  rotateControlSecret(node: string): string {
    const secret = `control-${randomBytes(24).toString("hex")}`;
    this.controlSecrets.set(node, secret);
    return secret;
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  async stop(): Promise<void> {
    await this.app?.close();
    this.app = undefined;
  }

  lastHeartbeat(node: string): HeartbeatRequest | undefined {
    return this.heartbeats.filter((beat) => beat.name === node).at(-1);
  }

  lastReplica(node: string, id: string) {
    return this.lastHeartbeat(node)?.replicas.find((replica) => replica.id === id);
  }

  /** Whether any heartbeat so far carried the replica in that state (a terminal state is reported, then dropped). */
  sawReplica(node: string, id: string, state: string) {
    return this.heartbeats
      .filter((beat) => beat.name === node)
      .flatMap((beat) => beat.replicas)
      .find((replica) => replica.id === id && replica.state === state);
  }

  async call(node: string, method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<{ status: number; body: unknown; text: string }> {
    const address = this.addresses.get(node);
    if (!address) throw new Error(`node ${node} has not joined`);
    const response = await request(new URL(path, address), {
      method,
      headers: { authorization: `Bearer ${this.controlSecrets.get(node) ?? this.credentials.get(node) ?? ""}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.body.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.statusCode, body: parsed, text };
  }

  async startReplica(node: string, replica: ReplicaSpecInput) {
    return await this.call(node, "POST", agentPaths.replicas, { protocol: 1, replica });
  }
}
