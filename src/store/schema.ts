import type { Generated } from "kysely";

/**
 * The tables, as both SQLite and Postgres hold them. Times are ISO-8601 text
 * in UTC (sortable, and the same on both engines); JSON documents are text,
 * since SQLite has no JSON column type and we never query inside them.
 */
export interface Database {
  /** One row. Every catalog change updates it first, which serializes catalog changes across servers sharing Postgres. */
  catalog_revision: { id: number; revision: number };
  models: { name: string; entry: string; created_at: string; updated_at: string };
  api_tokens: { id: string; name: string; role: string; token_hash: string; created_at: string };
  audit_events: {
    id: Generated<number>;
    at: string;
    actor: string;
    actor_user: string | null;
    action: string;
    model: string | null;
    before: string | null;
    after: string | null;
  };
}

export type StoreKind = "sqlite" | "postgres";
