import type { GatewayKey } from "../protocol/index.js";
import type { Kysely } from "kysely";
import { z } from "zod";
import type { Database } from "./schema.js";

/** A gateway key as stored, hash included: it never leaves the server. */
export type GatewayKeyRow = GatewayKey;

// Stored JSON is read leniently: a row that no longer parses allows nothing
// rather than everything, and never throws on the way to a listing.
const storedModels = z.array(z.string());

function modelsFrom(text: string | null): readonly string[] | null {
  if (text === null) return null;
  try {
    const parsed = storedModels.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

export async function insertGatewayKey(db: Kysely<Database>, key: GatewayKeyRow): Promise<void> {
  await db
    .insertInto("gateway_keys")
    .values({
      id: key.id,
      name: key.name,
      key_hash: key.hash,
      models: key.models === null ? null : JSON.stringify(key.models),
      rpm: key.rpm,
      tpm: key.tpm,
      max_in_flight: key.maxInFlight,
      expires_at: key.expiresAt,
      created_at: key.createdAt,
      revoked_at: key.revokedAt,
    })
    .execute();
}

/** Every key, revoked ones included (they answer "revoked", not "unknown"), oldest first. */
export async function listGatewayKeys(db: Kysely<Database>): Promise<GatewayKeyRow[]> {
  const rows = await db.selectFrom("gateway_keys").selectAll().orderBy("created_at").orderBy("name").execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    hash: row.key_hash,
    models: modelsFrom(row.models),
    rpm: row.rpm === null ? null : Number(row.rpm),
    tpm: row.tpm === null ? null : Number(row.tpm),
    maxInFlight: row.max_in_flight === null ? null : Number(row.max_in_flight),
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  }));
}

export async function revokeGatewayKey(db: Kysely<Database>, name: string, at: string): Promise<void> {
  await db.updateTable("gateway_keys").set({ revoked_at: at }).where("name", "=", name).where("revoked_at", "is", null).execute();
}
