import { z } from "zod";
import { modelEntrySchema, keyMaxInFlightSchema } from "../catalog/index.js";

/**
 * What `ctl export` writes and `ctl import` reads: the state an operator made
 * at runtime, never a secret. Runtime models are entries in server.yaml's own
 * shape (so one can be moved into the file by copy and paste), with the
 * revisions each moved through; gateway keys and admin tokens by name and
 * metadata only. An import makes new secrets for the keys and tokens it
 * creates and shows each once.
 */
export const catalogExportVersion = 1;

const isoTime = z.iso.datetime({ message: "an ISO-8601 time in UTC, such as 2026-12-01T10:00:00.000Z" });

export const exportedVersionSchema = z.strictObject({
  model: z.string().min(1),
  from: z.string(),
  to: z.string(),
  kind: z.enum(["update", "rollback", "canary-promote"], { message: "update, rollback or canary-promote" }),
  actor: z.string(),
  actor_user: z.string().nullable(),
  at: isoTime,
});

export const exportedKeySchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: "a key name of letters, digits and . _ - (at most 64)" }),
  /** Model, alias or adapter names the key may call; null for every model. */
  models: z.array(z.string().min(1)).nullable(),
  rpm: z.number().int().positive().nullable(),
  tpm: z.number().int().positive().nullable(),
  /**
   * Requests the key may have in flight at once. Written only when the key
   * has its own cap, so an export without one stays readable by a release
   * before per-key caps (its schema refuses a key it does not know); absent
   * or null, the target's limits.requests_per_key.
   */
  max_in_flight: keyMaxInFlightSchema.nullable().optional(),
  expires_at: isoTime.nullable(),
  /** A revoked key is kept revoked: its name stays taken, since usage is kept by key name. */
  revoked_at: isoTime.nullable(),
});

export const exportedTokenSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: "a token name of letters, digits and . _ - (at most 64)" }),
  role: z.enum(["admin", "read"], { message: "admin or read" }),
});

export const catalogExportSchema = z.strictObject({
  version: z.literal(catalogExportVersion, { message: `${catalogExportVersion}, the only export format this release reads` }),
  models: z.array(modelEntrySchema),
  versions: z.array(exportedVersionSchema),
  keys: z.array(exportedKeySchema),
  tokens: z.array(exportedTokenSchema),
});

export type CatalogExport = z.infer<typeof catalogExportSchema>;
export type ExportedKey = z.infer<typeof exportedKeySchema>;
export type ExportedToken = z.infer<typeof exportedTokenSchema>;

/** What an import did (or, in a dry run, would do): names only, plus each new secret once. */
export interface CatalogImportResult {
  readonly models: { readonly added: readonly string[]; readonly unchanged: readonly string[] };
  readonly keys: { readonly created: readonly { readonly name: string; readonly key: string | null }[]; readonly unchanged: readonly string[] };
  readonly tokens: { readonly created: readonly { readonly name: string; readonly role: string; readonly token: string | null }[]; readonly unchanged: readonly string[] };
}
