import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Actor } from "../catalog/index.js";
import { hashToken, newToken } from "../auth/index.js";
import { DomainError } from "../errors/light.js";
import { insertAuditEvent, type Store, type Database, deleteTokenByName, insertToken, listTokens, type TokenListing, type TokenRole } from "../store/index.js";
import type { Kysely } from "kysely";
import { dryRunAnswer, type DryRunAnswer } from "../protocol/index.js";

export const tokenNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: "a token name of letters, digits and . _ - (at most 64), such as ci-bot or grafana" });

/**
 * Admin-API tokens: admin tokens change things, read tokens only
 * read. A token is shown once, when it is created; only its hash is kept.
 * Changes are audited by name, never by value.
 */
export class TokenService {
  constructor(private readonly store: Store) {}

  list(): Promise<TokenListing[]> {
    return listTokens(this.store.db);
  }

  async create(name: string, role: TokenRole, actor: Actor): Promise<TokenListing & { token: string }> {
    // The catalog lock serializes every administrative change, tokens included,
    // so two servers sharing Postgres cannot both pass the name check.
    return this.store.withCatalogLock(async (transaction) => {
      await this.checkCreate(transaction, name);
      const token = newToken(role);
      const createdAt = new Date().toISOString();
      await insertToken(transaction, { id: randomUUID(), name, role, hash: hashToken(token) }, createdAt);
      await insertAuditEvent(transaction, { at: createdAt, actor: actor.token, actor_user: actor.user, action: "token-created", model: null, before: null, after: { name, role } });
      return { name, role, created_at: createdAt, token };
    });
  }

  /** What `create` would answer, refused as it would be, writing nothing: no token is made, so none is shown. */
  async previewCreate(name: string, role: TokenRole): Promise<DryRunAnswer<TokenListing>> {
    await this.checkCreate(this.store.db, name);
    return dryRunAnswer({ name, role, created_at: new Date().toISOString() }, [{ kind: "token-create", summary: `create the ${role} token ${name} (its value is shown once, by the real call)` }]);
  }

  /** What `revoke` would do, refused as it would be, writing nothing. */
  async previewRevoke(name: string): Promise<DryRunAnswer<{ revoked: string }>> {
    const target = await this.checkRevoke(this.store.db, name);
    return dryRunAnswer({ revoked: name }, [{ kind: "token-revoke", summary: `revoke the ${target.role} token ${name}: requests carrying it are refused from then on` }]);
  }

  private async checkCreate(db: Kysely<Database>, name: string): Promise<void> {
    if ((await listTokens(db)).some((token) => token.name === name)) {
      throw new DomainError("name_taken", `a token named "${name}" exists already`, "Choose another name, or revoke that token first with `llmgw ctl token revoke`.");
    }
  }

  private async checkRevoke(db: Kysely<Database>, name: string): Promise<TokenListing> {
    const tokens = await listTokens(db);
    const target = tokens.find((token) => token.name === name);
    if (!target) {
      throw new DomainError("token_not_found", `no token named "${name}"`, "List the tokens with `llmgw ctl tokens`.");
    }
    if (target.role === "admin" && tokens.filter((token) => token.role === "admin").length === 1) {
      throw new DomainError(
        "last_admin_token",
        `"${name}" is the only admin token; revoking it would leave nobody able to change anything`,
        "Create another admin token first (`llmgw ctl token create NAME --role admin`), then revoke this one.",
      );
    }
    return target;
  }

  async revoke(name: string, actor: Actor): Promise<void> {
    await this.store.withCatalogLock(async (transaction) => {
      const target = await this.checkRevoke(transaction, name);
      await deleteTokenByName(transaction, name);
      await insertAuditEvent(transaction, { at: new Date().toISOString(), actor: actor.token, actor_user: actor.user, action: "token-revoked", model: null, before: { name, role: target.role }, after: null });
    });
  }
}
