import type { ModelEntry } from "./schema.js";

/**
 * No secret in an API answer (SPEC S9). Operators put tokens in a profile's
 * env (HF_TOKEN), its args (--api-key), a mirror URL's user-info or a
 * presigned URL's query; every token, read-only ones included, may read
 * models, audit and replicas, so those values are masked on the way out. The
 * stored entry keeps them: the engines need them.
 */
const secretName = /(token|key|secret|passw|credential|auth|signature|^sig$)/i;
export const masked = "***";

/** `https://user:pass@host/...?X-Amz-Signature=...` → `https://user:***@host/...?X-Amz-Signature=***` */
export function redactUrl(text: string): string {
  const withoutUserInfo = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]+)@/i, (_match, scheme: string, userInfo: string) =>
    `${scheme}${userInfo.includes(":") ? `${userInfo.split(":")[0]}:${masked}` : masked}@`,
  );
  return withoutUserInfo.replace(/([?&])([^=&#\s]+)=([^&#\s]*)/g, (match, separator: string, name: string) =>
    secretName.test(name) ? `${separator}${name}=${masked}` : match,
  );
}

export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, secretName.test(name) ? masked : value]));
}

/** `--api-key sk-1` and `--hf-token=hf_x` keep their flags and lose their values; URLs lose their passwords. */
export function redactArgs(args: readonly string[]): string[] {
  return args.map((argument, index) => {
    const inline = /^(--?[A-Za-z0-9_-]+)=(.*)$/.exec(argument);
    if (inline) return secretName.test(inline[1] as string) ? `${inline[1]}=${masked}` : `${inline[1]}=${redactUrl(inline[2] as string)}`;
    const previous = args[index - 1];
    if (previous !== undefined && /^--?[A-Za-z]/.test(previous) && !previous.includes("=") && secretName.test(previous) && !argument.startsWith("-")) return masked;
    return redactUrl(argument);
  });
}

interface ProfileLike {
  readonly source: string;
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly args?: readonly string[] | undefined;
}

/** One profile as it may be shown; the same shape comes back (a stored entry's profile or a resolved one). */
export function redactProfile<Profile extends ProfileLike>(profile: Profile): Profile {
  return {
    ...profile,
    source: redactUrl(profile.source),
    ...(profile.env ? { env: redactEnv(profile.env) } : {}),
    ...(profile.args ? { args: redactArgs(profile.args) } : {}),
  };
}

/** A model entry as it may be shown: everything secret-looking masked. */
export function redactEntry(entry: ModelEntry): ModelEntry {
  return {
    ...entry,
    ...(entry.origin !== undefined ? { origin: redactUrl(entry.origin) } : {}),
    ...(entry.adapters ? { adapters: entry.adapters.map((adapter) => ({ ...adapter, source: redactUrl(adapter.source) })) } : {}),
    ...(entry.profiles ? { profiles: entry.profiles.map(redactProfile) } : {}),
    ...(entry.external ? { external: { ...entry.external, base_url: redactUrl(entry.external.base_url) } } : {}),
  };
}

/** Audit before/after hold whole entries; anything that is not one passes unchanged. */
export function redactAuditValue(value: unknown): unknown {
  if (typeof value !== "object" || value === null || !("name" in value)) return value;
  return redactEntry(value as ModelEntry);
}
