import { randomUUID } from "node:crypto";
import type { Actor } from "../catalog/actor.js";
import { hashToken, newToken } from "../auth/tokens.js";
import { DomainError } from "../errors/domain-error.js";
import type { GatewayKeyCreated, GatewayKeyView } from "../protocol/gateway-views.js";
import { insertAuditEvent } from "../store/audit-rows.js";
import { insertGatewayKey, listGatewayKeys, revokeGatewayKey, type GatewayKeyRow } from "../store/gateway-key-rows.js";
import type { Store } from "../store/open-store.js";
import type { CatalogService } from "./catalog-service.js";
import { parseMoment } from "../catalog/parse-moment.js";

export interface NewGatewayKey {
  readonly name: string;
  readonly models?: readonly string[] | undefined;
  readonly rpm?: number | undefined;
  readonly tpm?: number | undefined;
  /** A duration from now (30d) or a date; see parseMoment. */
  readonly expires?: string | undefined;
}

/**
 * Gateway API keys for clients of /v1. A key is shown once, when made; only
 * its hash is kept. Revoking keeps the row (its name and usage stay). Every
 * change is audited by key name and tells the gateway at once (`onChange`),
 * so the API's answer means the change is in force on this server.
 */
export class GatewayKeyService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly onChange: () => Promise<void> = async () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  async list(): Promise<GatewayKeyView[]> {
    const at = this.now();
    return (await listGatewayKeys(this.store.db)).map((row) => gatewayKeyView(row, at));
  }

  async create(input: NewGatewayKey, actor: Actor): Promise<GatewayKeyCreated> {
    const nowMs = this.now();
    const expiresAt = input.expires === undefined ? null : expiryFrom(input.expires, nowMs);
    const models = input.models === undefined ? null : [...new Set(input.models)];
    if (models !== null) await this.checkNames(models);
    const created = await this.store.withCatalogLock(async (transaction) => {
      if ((await listGatewayKeys(transaction)).some((key) => key.name === input.name)) {
        throw new DomainError(
          "name_taken",
          `a gateway key named "${input.name}" exists already (revoked keys keep their names, so their usage stays theirs)`,
          "Choose another name; `llmgw ctl keys` lists the names in use.",
        );
      }
      const key = newToken("key");
      const row: GatewayKeyRow = {
        id: randomUUID(),
        name: input.name,
        hash: hashToken(key),
        models,
        rpm: input.rpm ?? null,
        tpm: input.tpm ?? null,
        expiresAt,
        createdAt: new Date(nowMs).toISOString(),
        revokedAt: null,
      };
      await insertGatewayKey(transaction, row);
      const view = gatewayKeyView(row, nowMs);
      await insertAuditEvent(transaction, { at: row.createdAt, actor: actor.token, actor_user: actor.user, action: "gateway-key-created", model: null, before: null, after: view });
      return { ...view, key };
    });
    await this.onChange();
    return created;
  }

  async revoke(name: string, actor: Actor): Promise<GatewayKeyView> {
    const revoked = await this.store.withCatalogLock(async (transaction) => {
      const target = (await listGatewayKeys(transaction)).find((key) => key.name === name);
      if (!target) {
        throw new DomainError("gateway_key_not_found", `no gateway key named "${name}"`, "List the gateway keys with `llmgw ctl keys`.");
      }
      if (target.revokedAt !== null) return gatewayKeyView(target, this.now());
      const at = new Date(this.now()).toISOString();
      await revokeGatewayKey(transaction, name, at);
      const before = gatewayKeyView(target, this.now());
      const after = gatewayKeyView({ ...target, revokedAt: at }, this.now());
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "gateway-key-revoked", model: null, before, after });
      return after;
    });
    await this.onChange();
    return revoked;
  }

  /** A typo in --models would make a key that can call nothing; names are checked against the catalog as it is now. */
  private async checkNames(models: readonly string[]): Promise<void> {
    const known = new Set<string>();
    for (const model of await this.catalog.list()) {
      known.add(model.name);
      for (const alias of model.aliases) known.add(alias);
      for (const adapter of model.entry.adapters ?? []) known.add(adapter.name);
    }
    const unknown = models.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new DomainError(
        "model_not_found",
        `models: ${unknown.map((name) => `"${name}"`).join(", ")} ${unknown.length === 1 ? "is not a model, alias or adapter" : "are not models, aliases or adapters"} in the catalog`,
        known.size > 0 ? `Names a key may be limited to: ${[...known].sort().join(", ")}.` : "The catalog is empty; add the model first (`llmgw ctl model add`).",
      );
    }
  }
}

/** A key born expired is always a typo, so a past expiry is refused. */
function expiryFrom(text: string, nowMs: number): string {
  const atMs = parseMoment(text, nowMs, "ahead", "expires");
  if (atMs <= nowMs) {
    throw new DomainError("invalid_input", `expires: ${new Date(atMs).toISOString()} is already past`, "Give a time in the future, or a duration from now such as 30d.");
  }
  return new Date(atMs).toISOString();
}

export function gatewayKeyView(row: GatewayKeyRow, nowMs: number): GatewayKeyView {
  const expiresAtMs = row.expiresAt === null ? null : Date.parse(row.expiresAt);
  const expired = expiresAtMs !== null && (Number.isNaN(expiresAtMs) || nowMs >= expiresAtMs);
  return {
    name: row.name,
    state: row.revokedAt !== null ? "revoked" : expired ? "expired" : "active",
    models: row.models === null ? null : [...row.models],
    rpm: row.rpm,
    tpm: row.tpm,
    expires_at: row.expiresAt,
    created_at: row.createdAt,
    revoked_at: row.revokedAt,
  };
}
