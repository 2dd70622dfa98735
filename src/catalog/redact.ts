import type { ModelEntry } from "./schema.js";

/**
 * No secret in an API answer (SPEC S9). Operators put tokens in a profile's
 * env (HF_TOKEN) or in a mirror URL's user-info; every token, read-only ones
 * included, may read models and audit, so those values are masked on the way
 * out. The stored entry keeps them: the engines need them.
 */
const secretName = /(token|key|secret|passw|credential|auth)/i;
export const masked = "***";

export function redactUrl(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]+)@/i, (_match, scheme: string, userInfo: string) =>
    `${scheme}${userInfo.includes(":") ? `${userInfo.split(":")[0]}:${masked}` : masked}@`,
  );
}

export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, secretName.test(name) ? masked : value]));
}

/** A model entry as it may be shown: secret-looking env values and URL passwords masked. */
export function redactEntry(entry: ModelEntry): ModelEntry {
  return {
    ...entry,
    ...(entry.origin !== undefined ? { origin: redactUrl(entry.origin) } : {}),
    ...(entry.adapters ? { adapters: entry.adapters.map((adapter) => ({ ...adapter, source: redactUrl(adapter.source) })) } : {}),
    ...(entry.profiles
      ? { profiles: entry.profiles.map((profile) => ({ ...profile, source: redactUrl(profile.source), ...(profile.env ? { env: redactEnv(profile.env) } : {}) })) }
      : {}),
    ...(entry.external ? { external: { ...entry.external, base_url: redactUrl(entry.external.base_url) } } : {}),
  };
}

/** Audit before/after hold whole entries; anything that is not one passes unchanged. */
export function redactAuditValue(value: unknown): unknown {
  if (typeof value !== "object" || value === null || !("name" in value)) return value;
  return redactEntry(value as ModelEntry);
}
