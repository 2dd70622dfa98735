import type { Logger } from "pino";
import { DomainError } from "../errors/light.js";
import { hashToken } from "../auth/index.js";
import {
  protocolVersion,
  type FabricNetwork,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinRequest,
  type JoinResponse,
  type ReplicaStatus,
  type ServerIdentity,
} from "../protocol/for-agent.js";
import { otherServerError, type NodeCredential } from "./server-credential.js";
import type { PersistedReplica } from "./agent-state.js";
import type { InventoryTracker } from "./inventory-tracker.js";
import type { ServerCallFailure, ServerCallResult } from "./server-client.js";

/**
 * The longest wait between heartbeats while the server is away. A restarted
 * server calls a node lost when it has not heard from it within its settling
 * window (20 s by default) and heartbeat deadline (15 s); an agent backing off
 * to 30 s was marked lost, with every replica on it, though nothing had
 * failed. 5 s (6 s with jitter) keeps well inside both.
 */
const maxBackoffMs = 5_000;

/** How soon a replica's change of state reaches the server: a fraction of a second, not the next beat. */
const stateChangeBeatMs = 100;

/**
 * The wait before the next heartbeat: the interval, doubled per failure up to
 * maxBackoffMs, and jittered (±20 %) so agents that lost the server together
 * do not return in one wave.
 */
export function heartbeatDelayMs(failures: number, intervalMs: number, random: () => number = Math.random): number {
  const delay = failures === 0 ? intervalMs : Math.min(maxBackoffMs, intervalMs * 2 ** Math.min(failures, 8));
  return Math.round(delay * (0.8 + random() * 0.4));
}

/** The calls an agent makes to its server (server-client.ts; tests give a stand-in). */
export interface ServerCalls {
  join(body: JoinRequest): Promise<ServerCallResult<JoinResponse>>;
  heartbeat(credential: string, body: HeartbeatRequest): Promise<ServerCallResult<HeartbeatResponse>>;
  /** Asked without a credential, before the credential goes to a server at a new URL. */
  identity(): Promise<ServerCallResult<ServerIdentity>>;
}

/** What the session reads of the node's replicas. */
export interface SessionReplicas {
  list(): ReplicaStatus[];
  persisted(): PersistedReplica[];
  scrapeLoad(): Promise<void>;
  acknowledge(delivered: readonly ReplicaStatus[]): void;
}

export interface ServerSessionOptions {
  readonly name: string;
  readonly serverUrl: string;
  readonly joinToken: string | undefined;
  /** The control URL the server should call. */
  readonly address: string;
  readonly fabric: string;
  /** Where the node is reached on its fabric: in the join and on every beat, so an agent restarted with another address moves its node there. */
  readonly fabricNetwork?: FabricNetwork | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** Until the join answer says otherwise. */
  readonly heartbeatIntervalMs: number;
  /** With --simulate: the pretend cards report what the replicas hold. */
  readonly simulated: boolean;
  readonly credential: NodeCredential;
  /** Named in the messages about the credential. */
  readonly stateFile: string;
  readonly calls: ServerCalls;
  readonly replicas: SessionReplicas;
  readonly inventory: InventoryTracker;
  /** Writes the agent's state file (the credential is in it). */
  readonly persist: () => Promise<void>;
  /** The server refused this agent for good: the agent closes and its start (or `done`) fails with this error. */
  readonly stopForGood: (error: DomainError) => Promise<void>;
  readonly logger: Logger;
  readonly random?: (() => number) | undefined;
}

/**
 * The agent's side of its conversation with the server: join with the token
 * when it holds no credential, heartbeat with the credential, and on each
 * failure decide between retrying (an outage: engines keep running), joining
 * again (the server forgot the node) and stopping for good (a refused token,
 * another protocol version, a name another live agent holds).
 */
export type { NodeCredential } from "./server-credential.js";

export class ServerSession {
  private heartbeatIntervalMs: number;
  private failureCount = 0;
  private connectedOnce = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private heartbeatSoon: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private resolveConnected!: () => void;
  /** Resolves at the first accepted join or heartbeat. */
  readonly connected: Promise<void>;

  constructor(private readonly options: ServerSessionOptions) {
    this.heartbeatIntervalMs = options.heartbeatIntervalMs;
    this.connected = new Promise<void>((resolve) => {
      this.resolveConnected = resolve;
    });
  }

  /** Failed calls since the last accepted heartbeat: the backoff grows with them. */
  get failures(): number {
    return this.failureCount;
  }

  get intervalMs(): number {
    return this.heartbeatIntervalMs;
  }

  /** Beats on, each after the last has settled, until stop(). */
  start(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      void this.beat().finally(() => this.start());
    }, heartbeatDelayMs(this.failureCount, this.heartbeatIntervalMs, this.options.random));
  }

  /** A replica changed state: tell the server shortly rather than at the next beat (once connected: before that the first beat carries it). */
  soon(): void {
    if (this.closed || !this.connectedOnce || this.heartbeatSoon) return;
    this.heartbeatSoon = setTimeout(() => {
      this.heartbeatSoon = undefined;
      void this.beat();
    }, stateChangeBeatMs);
  }

  stop(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.heartbeatSoon) clearTimeout(this.heartbeatSoon);
  }

  /** One heartbeat (a join first when the node holds no credential); a beat asked for while one runs waits for that one. */
  async beat(): Promise<void> {
    if (this.closed) return;
    if (this.beating) return await this.beating;
    this.beating = (async () => {
      try {
        await this.beatOnce();
      } catch (error) {
        this.failureCount += 1;
        this.options.logger.error({ error: (error as Error).message }, "heartbeat failed");
      } finally {
        this.beating = undefined;
      }
    })();
    return await this.beating;
  }

  private async beatOnce(): Promise<void> {
    const { credential, replicas, inventory, name } = this.options;
    if (credential.credential !== undefined && credential.unverified && !(await this.checkServerIdentity())) return;
    if (credential.credential === undefined) {
      const joined = await this.join();
      if (joined !== "joined") {
        await this.handleFailure(joined, "join");
        return;
      }
    }
    const report = await inventory.report(
      this.options.simulated
        ? replicas.persisted().map((replica) => ({ cards: replica.spec.cards, state: replica.state, gpuMemoryUtilization: replica.spec.gpu_memory_utilization }))
        : undefined,
    );
    await replicas.scrapeLoad();
    const delivered: ReplicaStatus[] = replicas.list();
    const result = await this.options.calls.heartbeat(credential.credential as string, {
      protocol: protocolVersion,
      name,
      address: this.options.address,
      ...(report.send ? { inventory: report.inventory } : {}),
      replicas: delivered,
      ...this.fabricNetworkField(),
      ...(credential.controlSecretHash !== undefined ? { control_secret_hash: credential.controlSecretHash } : {}),
    });
    if (!result.ok) {
      await this.handleFailure(result.failure, "heartbeat");
      return;
    }
    this.failureCount = 0;
    if (result.value.server_id !== undefined && result.value.server_id !== credential.serverId) {
      // A node that joined an earlier release learns its server's identity here, so it may follow the server to a new address later.
      credential.serverId = result.value.server_id;
      await this.options.persist();
    }
    const offered = result.value.control_secret;
    if (offered !== undefined && hashToken(offered) !== credential.controlSecretHash) {
      credential.controlSecretHash = hashToken(offered);
      await this.options.persist();
      this.options.logger.info({ node: name }, "control secret updated by the server");
    }
    inventory.delivered(report);
    replicas.acknowledge(delivered);
    this.markConnected();
  }

  private fabricNetworkField(): { fabric_network?: FabricNetwork } {
    const network = this.options.fabricNetwork;
    return network !== undefined ? { fabric_network: { ...network } } : {};
  }

  private markConnected(): void {
    this.connectedOnce = true;
    this.resolveConnected();
  }

  private async join(): Promise<"joined" | ServerCallFailure> {
    const { joinToken, name, serverUrl, credential, inventory } = this.options;
    if (!joinToken) {
      return { kind: "refused", status: 401, message: `the server refused agent ${name}'s saved credential and no join token was given` };
    }
    const joinedWith = inventory.current;
    const result = await this.options.calls.join({
      protocol: protocolVersion,
      join_token: joinToken,
      name,
      address: this.options.address,
      fabric: this.options.fabric,
      ...this.fabricNetworkField(),
      labels: { ...this.options.labels },
      inventory: joinedWith,
    });
    if (!result.ok) return result.failure;
    Object.assign(credential, { credential: result.value.credential, serverUrl, serverId: result.value.server_id, unverified: false });
    // A server without control secrets (an older release) presents the credential; the control API accepts it then.
    credential.controlSecretHash = result.value.control_secret !== undefined ? hashToken(result.value.control_secret) : undefined;
    this.heartbeatIntervalMs = result.value.heartbeat_interval_ms;
    inventory.joinedWith(joinedWith);
    await this.options.persist();
    this.options.logger.info({ server: serverUrl, node: name, address: this.options.address }, "agent-joined");
    return "joined";
  }

  /**
   * The agent was pointed at another URL than the one its credential was
   * used with: the server there gets the credential only if it presents the
   * identity of the server that gave it. Answers whether the beat goes on:
   * with the credential (the same server), or with a join (another server,
   * and a join token was given); a server that cannot be reached is retried.
   */
  private async checkServerIdentity(): Promise<boolean> {
    const { credential, serverUrl, name, logger } = this.options;
    const answer = await this.options.calls.identity();
    if (!answer.ok && answer.failure.kind === "unreachable") {
      await this.handleFailure(answer.failure, "identity check");
      return false;
    }
    if (!answer.ok && answer.failure.kind === "version") {
      await this.options.stopForGood(answer.failure.error);
      return false;
    }
    const presented = answer.ok ? answer.value.server_id : undefined;
    if (presented !== undefined && presented === credential.serverId) {
      logger.info({ node: name, server: serverUrl, previously: credential.serverUrl, server_id: presented }, "server-address-changed: the same server at a new address; the node keeps its credential and its replicas");
      Object.assign(credential, { serverUrl, unverified: false });
      await this.options.persist();
      return true;
    }
    const refusal = otherServerError(name, serverUrl, credential, presented, this.options.stateFile);
    if (!this.options.joinToken) {
      await this.options.stopForGood(refusal);
      return false;
    }
    // A join token for this server was given: the node moves to it, and the other server's credential is dropped unsent.
    logger.warn({ hint: refusal.hint }, `${refusal.message}; joining it with the join token given`);
    Object.assign(credential, { credential: undefined, controlSecretHash: undefined, serverUrl, serverId: undefined, unverified: false });
    return true;
  }

  /**
   * Engines of this node found running (by the state file or by their marker) show that this agent is the
   * node's own, started again without its credential (a lost state file): the live agent the server still
   * hears is its dead predecessor, so it waits for the server's deadline instead of giving up.
   */
  private runsEnginesOfThisNode(): boolean {
    return this.options.replicas.list().some((replica) => !["stopped", "failed"].includes(replica.state));
  }

  private async handleFailure(failure: ServerCallFailure, during: "join" | "heartbeat" | "identity check"): Promise<void> {
    const { name, serverUrl, logger } = this.options;
    switch (failure.kind) {
      case "version":
        await this.options.stopForGood(failure.error);
        return;
      case "refused":
        if (during === "join") {
          await this.options.stopForGood(
            new DomainError("join_refused", `the server at ${serverUrl} refused agent ${name}'s join: ${failure.message}`, "Get a fresh join token with `llmgw ctl node token` and start the agent with --token."),
          );
          return;
        }
        // The server forgot this node or its credential (its state was reset): join again.
        logger.warn({ message: failure.message, ...(failure.hint ? { hint: failure.hint } : {}) }, "credential refused; joining again");
        this.options.credential.credential = undefined;
        {
          const rejoined = await this.join();
          if (rejoined !== "joined") await this.handleFailure(rejoined, "join");
          else this.markConnected();
        }
        return;
      case "unreachable":
      case "rejected":
        if (failure.kind === "rejected" && failure.code === "name_taken" && during === "join" && !this.connectedOnce && !this.runsEnginesOfThisNode()) {
          // Another live agent has this name: retrying cannot help while it runs, and a retrying agent
          // would say nothing on the console. A later rejoin (the server forgot this node) keeps retrying:
          // its engines are running, and the other agent may be the one that should go.
          await this.options.stopForGood(new DomainError("name_taken", `the server at ${serverUrl} refused agent ${name}'s join: ${failure.message}`, failure.hint ?? "Give this agent its own --name."));
          return;
        }
        this.failureCount += 1;
        // Engines keep running whatever happens here: an outage of the control plane must never take the models down.
        logger.warn({ failures: this.failureCount, message: failure.message, ...(failure.hint ? { hint: failure.hint } : {}) }, `${during} failed; replicas keep running, retrying`);
        return;
    }
  }
}
