import type { ModelEntry } from "./schema.js";

/**
 * No secret in an API answer. Operators put tokens in a profile's
 * env (HF_TOKEN), its args (--api-key), a mirror URL's user-info or a
 * presigned URL's query; every token, read-only ones included, may read
 * models, audit and replicas, so those values are masked on the way out. The
 * stored entry keeps them: the engines need them.
 */
export const masked = "***";

const secretWords = ["token", "secret", "password", "passwd", "credential", "credentials", "auth", "authorization", "key", "signature", "sig"];

/**
 * Whether a flag, environment variable or query parameter holds a secret, by
 * the words of its name (split at - and _), not by substring: --tokenizer,
 * TOKENIZERS_PARALLELISM and --max-num-batched-tokens are settings an
 * operator needs to read, while HF_TOKEN, --api-key, PGPASSWORD and
 * X-Amz-Signature are not to be shown. A word that ends in a secret word
 * counts (PGPASSWORD, APIKEY, OAUTH).
 */
export function isSecretName(name: string): boolean {
  const words = name.replace(/^-+/, "").toLowerCase().split(/[-_.]/);
  return words.some((word) => secretWords.some((secret) => word === secret || word.endsWith(secret)));
}

/** `https://user:pass@host/...?X-Amz-Signature=...` → `https://user:***@host/...?X-Amz-Signature=***` */
export function redactUrl(text: string): string {
  const withoutUserInfo = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]+)@/i, (_match, scheme: string, userInfo: string) =>
    `${scheme}${userInfo.includes(":") ? `${userInfo.split(":")[0]}:${masked}` : masked}@`,
  );
  return withoutUserInfo.replace(/([?&])([^=&#\s]+)=([^&#\s]*)/g, (match, separator: string, name: string) =>
    isSecretName(name) ? `${separator}${name}=${masked}` : match,
  );
}

export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, isSecretName(name) ? masked : value]));
}

/**
 * A command line as it may be shown (profile args in API answers, an engine's
 * argv in its log): the value of a flag named like a secret (`--api-key sk-…`,
 * `--hf-token=…`) is masked, and so is any URL's password.
 */
export function redactArgs(argv: readonly string[]): string[] {
  const shown: string[] = [];
  let maskNext = false;
  for (const argument of argv) {
    if (maskNext && !argument.startsWith("--")) {
      shown.push(masked);
      maskNext = false;
      continue;
    }
    maskNext = false;
    const equals = argument.indexOf("=");
    if (argument.startsWith("-") && equals > 0) {
      const flag = argument.slice(0, equals);
      shown.push(`${flag}=${isSecretName(flag) ? masked : redactUrl(argument.slice(equals + 1))}`);
      continue;
    }
    if (argument.startsWith("-") && isSecretName(argument)) maskNext = true;
    shown.push(redactUrl(argument));
  }
  return shown;
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
