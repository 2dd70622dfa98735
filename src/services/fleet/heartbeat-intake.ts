import type { Dispatcher } from "undici";
import { bearerToken, hashToken, sameSecret, type ControlSecret } from "../../auth/index.js";
import { parseWithSchema } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import { heartbeatRequestSchema, protocolVersion, type HeartbeatResponse } from "../../protocol/index.js";
import {
  deleteReplica,
  findNode,
  findReplica,
  listReplicas,
  updateReplica,
  upsertReplica,
  type StoredNode,
  type Store,
  insertEvents,
} from "../../store/index.js";
import { stopReplicaOnAgent, type AgentAddress } from "../agent-client.js";
import { heartbeatDiff } from "../heartbeat-diff.js";
import type { NodesHeard } from "./nodes-heard.js";
import { refuseOtherProtocol } from "./refuse-other-protocol.js";

/** Where the fleet service logs what no caller is told (fastify's request.log in the API). */
export interface FleetLog {
  info(facts: Record<string, unknown>, message: string): void;
  warn(facts: Record<string, unknown>, message: string): void;
}

const silentLog: FleetLog = { info: () => undefined, warn: () => undefined };

/** A replica the agent stopped reporting is failed only after this long: a heartbeat built before its start may still arrive. */
const missingGraceMs = 10_000;

/**
 * The node a heartbeat's credential belongs to. An unknown name and a wrong
 * credential get the same answer, so a caller without a credential cannot
 * learn which node names exist. Compared by hash, since only the hash is
 * stored: a stolen row presented as a token does not authenticate.
 */
async function authenticatedNode(store: Store, name: string, authorization: string | undefined): Promise<StoredNode> {
  const node = await findNode(store.db, name);
  const given = bearerToken(authorization) ?? "";
  if (!node || given === "" || !sameSecret(hashToken(given), node.credential_hash)) {
    throw new DomainError("unauthorized", `node ${name}: no joined node of that name holds this credential`, "The agent joins again with its join token.");
  }
  return node;
}

/** A node's heartbeat taken in: its inventory and replicas recorded, and the stops it still owes sent. */
export class HeartbeatIntake {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly controlSecretOf: (node: Pick<StoredNode, "credential_hash">) => ControlSecret,
    private readonly heard: NodesHeard,
    /** Verifies agents' HTTPS control APIs against nodes.ca; undefined: the system's CAs. */
    private readonly agentDispatcher?: Dispatcher | undefined,
  ) {}

  /** Told of each beat that changed what the reconciler decides on (see heartbeatDiff and NodesHeard.record). */
  private onDecisiveChange: () => void = () => undefined;

  whenDecisive(listener: () => void): void {
    this.onDecisiveChange = listener;
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  /** `log` gets what the agent is not told: a replica id it reports that belongs to another node, a pending stop that failed. */
  async heartbeat(authorization: string | undefined, body: unknown, log: FleetLog = silentLog): Promise<HeartbeatResponse> {
    refuseOtherProtocol(body);
    const beat = parseWithSchema(heartbeatRequestSchema, body ?? {}, { label: "heartbeat" });
    const node = await authenticatedNode(this.store, beat.name, authorization);
    const nodeChanged = await this.heard.record(node, beat);
    const writes = heartbeatDiff({
      node: beat.name,
      reported: beat.replicas,
      stored: await listReplicas(this.store.db, { node: beat.name }),
      nowMs: this.now(),
      missingGraceMs,
    });
    const controlSecret = this.controlSecretOf(node);
    const address: AgentAddress = { name: node.name, address: beat.address, controlSecret: controlSecret.secret, dispatcher: this.agentDispatcher };
    for (const write of writes.upserts) {
      if (!(await upsertReplica(this.store.db, write))) await this.conflict(write.id, beat.name, log);
    }
    for (const orphan of writes.orphans) {
      if (await findReplica(this.store.db, orphan.id)) {
        await this.conflict(orphan.id, beat.name, log);
        continue;
      }
      if (this.stopsInFlight.has(orphan.id)) continue;
      await insertEvents(this.store.db, [
        {
          at: this.iso(),
          kind: "replica-orphan-stopped",
          model: null,
          replica: orphan.id,
          node: beat.name,
          message: `node ${beat.name} reports replica ${orphan.id} (${JSON.stringify(orphan.model)}, ${orphan.state}) that the server never placed there: its agent is told to stop it`,
        },
      ]);
      this.stopOnReturn(address, orphan.id, log);
    }
    for (const id of writes.deletes) await deleteReplica(this.store.db, id);
    for (const failure of writes.failures) await updateReplica(this.store.db, failure.id, { status: failure.status, updated_at: failure.status.since });
    for (const id of writes.stopsToSend) this.stopOnReturn(address, id, log);
    // At hundreds of nodes, a pass woken by every beat was a full pass every 250 ms that found nothing to do.
    if (nodeChanged || writes.changesDecisions) this.onDecisiveChange();
    // An agent upgraded in place, or one whose server key was restored, learns the secret it should expect.
    return { protocol: protocolVersion, ...(beat.control_secret_hash !== controlSecret.hash ? { control_secret: controlSecret.secret } : {}) };
  }

  /**
   * Replica ids are unique across the fleet (startReplica refuses a taken one), so this is an
   * agent whose state file came from another node. Recording it here would move the row to
   * this node and back at every beat of each, and stopping it could stop the wrong engine; the
   * first node keeps it.
   */
  private async conflict(id: string, node: string, log: FleetLog): Promise<void> {
    const owner = await findReplica(this.store.db, id);
    log.warn({ replica: id, node, recorded_on: owner?.node }, "replica-conflict-ignored");
  }

  /** Stops being sent to returning agents; one per replica at a time, so beats during the call do not repeat it. */
  private readonly stopsInFlight = new Set<string>();

  /**
   * Asks the agent to stop a replica after the heartbeat is answered: the
   * agent's heartbeat must not wait on the server calling it back (an agent
   * the server cannot reach would see every beat time out).
   */
  private stopOnReturn(address: AgentAddress, id: string, log: FleetLog): void {
    if (this.stopsInFlight.has(id)) return;
    this.stopsInFlight.add(id);
    void stopReplicaOnAgent(address, id, false)
      .then(
        () => log.info({ replica: id, node: address.name }, "replica-stop-delivered"),
        (error: unknown) => log.warn({ replica: id, node: address.name, error: (error as Error).message }, "replica-stop-undelivered"),
      )
      .finally(() => this.stopsInFlight.delete(id));
  }
}
