import { randomUUID } from "node:crypto";
import { hashToken, newToken } from "../../auth/index.js";
import { parseWithSchema } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import { joinRequestSchema, protocolVersion, type JoinResponse } from "../../protocol/index.js";
import { findNode, insertJoinToken, joinTokenExists, upsertNode, type StoredNode, type Store } from "../../store/index.js";
import type { FleetSettings } from "./fleet-settings.js";
import { refuseOtherProtocol } from "./refuse-other-protocol.js";

/** Join tokens, and a node joining with one: its credential issued, its row written. */
export class NodeJoin {
  constructor(
    private readonly store: Store,
    private readonly settings: FleetSettings,
    private readonly now: () => number,
    private readonly controlSecretOf: (node: Pick<StoredNode, "credential_hash">) => string,
  ) {}

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  async createJoinToken(createdBy: string): Promise<{ token: string; created_at: string }> {
    const token = newToken("join");
    const created_at = this.iso();
    await insertJoinToken(this.store.db, { id: randomUUID(), token_hash: hashToken(token), created_at, created_by: createdBy });
    return { token, created_at };
  }

  async join(body: unknown): Promise<JoinResponse> {
    refuseOtherProtocol(body);
    const request = parseWithSchema(joinRequestSchema, body ?? {}, { label: "join request" });
    if (!(await joinTokenExists(this.store.db, hashToken(request.join_token)))) {
      throw new DomainError(
        "join_refused",
        `node ${request.name}: the join token is not one this server issued`,
        "Get a join token with `llmgw ctl node token` on the server and start the agent with --token.",
      );
    }
    const existing = await findNode(this.store.db, request.name);
    if (existing) {
      // A join under a live node's name would take over its credential, and the two agents would then
      // take the name back from each other at every beat. This holds for the same host too: a
      // restarting agent keeps its credential and does not join, so a live name joined from the same
      // host is a second agent there (--name defaults to the host name), not a restart.
      const silentMs = this.now() - Date.parse(existing.last_seen_at);
      if (silentMs < this.settings.heartbeatDeadlineMs) {
        throw new DomainError(
          "name_taken",
          `node name ${request.name} is taken by the agent at ${existing.address}, heard from ${Math.round(silentMs / 1000)} s ago; the agent at ${request.address} cannot join under it`,
          `Give this agent its own --name. If it replaces that machine, it joins once the old agent has been silent for ${Math.round(this.settings.heartbeatDeadlineMs / 1000)} s.`,
        );
      }
    }
    const credential = newToken("node");
    const credentialHash = hashToken(credential);
    const at = this.iso();
    await upsertNode(this.store.db, {
      name: request.name,
      address: request.address,
      fabric: request.fabric,
      labels: request.labels,
      inventory: request.inventory,
      fabric_network: request.fabric_network,
      credential_hash: credentialHash,
      joined_at: at,
      last_seen_at: at,
    });
    return {
      protocol: protocolVersion,
      node: request.name,
      credential,
      control_secret: this.controlSecretOf({ credential_hash: credentialHash }),
      heartbeat_interval_ms: this.settings.heartbeatIntervalMs,
    };
  }
}
