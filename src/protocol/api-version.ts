import { packageRoot } from "../package-root.js";

/** The package's version, from its package.json. */
export const softwareVersion: string = packageRoot.manifest.version ?? "0.0.0";

/** Admin API versions this build speaks. A new version is added when an old caller would misread an answer. */
export interface ApiRange {
  readonly min: number;
  readonly max: number;
}
export const serverApiRange: ApiRange = { min: 1, max: 1 };
export const clientApiRange: ApiRange = { min: 1, max: 1 };

export const versionHeader = "llmgw-version";
export const apiHeader = "llmgw-api";
/** The local user the CLI runs as (the sudo user when run as root), for the audit record. */
export const userHeader = "llmgw-user";

export function formatApiRange(range: ApiRange): string {
  return range.min === range.max ? String(range.min) : `${range.min}-${range.max}`;
}

export function parseApiRange(text: string | undefined): ApiRange | undefined {
  const match = text === undefined ? null : /^\s*(\d+)(?:\s*-\s*(\d+))?\s*$/.exec(text);
  if (!match) return undefined;
  const min = Number(match[1]);
  const max = match[2] === undefined ? min : Number(match[2]);
  return min <= max ? { min, max } : undefined;
}

export type Negotiation = { readonly version: number } | { readonly upgrade: "server" | "client" };

/**
 * The highest API version both sides speak. A newer CLI talking to an older
 * server falls back to the older API this way; when the ranges do not meet,
 * the side whose range is entirely older is the one to upgrade.
 */
export function negotiateApiVersion(client: ApiRange, server: ApiRange): Negotiation {
  const version = Math.min(client.max, server.max);
  if (version >= client.min && version >= server.min) return { version };
  return { upgrade: server.max < client.min ? "server" : "client" };
}
