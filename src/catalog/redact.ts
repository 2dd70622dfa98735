import type { ModelEntry } from "./schema.js";

/**
 * No secret in an API answer. Operators put tokens in a profile's env
 * (HF_TOKEN), its args (--api-key), a mirror URL's user-info or a presigned
 * URL's query; every token, read-only ones included, may read models, audit
 * and replicas, so those values are masked on the way out. The stored entry
 * keeps them: the engines need them.
 */
export const masked = "***";

/**
 * Who reads an answer. An admin token sees env values masked by rule (secret
 * names, URL passwords); a read-only token sees no env value at all, since a
 * secret under a name no rule knows (MY_DB=hunter2) is still a secret, and
 * read tokens are the ones handed to dashboards.
 */
export type Audience = "admin" | "read";

/** Words that name a secret, matched whole or as the end of a word, with or without a plural s. */
const secretWords = ["secret", "password", "passwd", "passphrase", "credential", "auth", "authorization", "apikey", "key", "signature", "cookie", "jwt", "bearer"];
/** Words that name a secret only when they are the whole word: `pass` ends bypass and compass, `sig` ends nothing useful. */
const wholeSecretWords = ["pass", "pgpass", "sig", "pat"];
/**
 * "token" names a secret (HF_TOKEN, GITHUB_TOKENS, --hf-token) except where it
 * counts tokens of text: --max-num-batched-tokens, --long-prefill-token-threshold,
 * BOS_TOKEN_ID. A name with any of these words counts, it does not authenticate.
 */
const tokenCountWords = new Set(["max", "min", "num", "total", "batched", "prefill", "speculative", "threshold", "count", "limit", "budget", "per", "lookahead", "draft", "output", "input", "new", "special", "bos", "eos", "pad", "id", "ids", "image", "vision", "chunk", "chunked", "context", "len", "length", "size", "skip"]);

function nameWords(name: string): string[] {
  return name
    .replace(/^-+/, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[-_.\s]+/)
    .filter((word) => word.length > 0);
}

/**
 * Whether a flag, environment variable or query parameter holds a secret, by
 * the words of its name (split at - _ . and camelCase), not by substring:
 * --tokenizer, TOKENIZERS_PARALLELISM and --max-num-batched-tokens are
 * settings an operator needs to read, while HF_TOKEN, --api-key, PGPASSWORD,
 * PGPASS, DB_PASSWORDS, MY_API_KEYS and X-Amz-Signature are not to be shown.
 */
export function isSecretName(name: string): boolean {
  const words = nameWords(name);
  const countsTokens = words.some((word) => tokenCountWords.has(word));
  return words.some((word) => {
    const singular = word.endsWith("s") && word.length > 1 ? word.slice(0, -1) : word;
    if (wholeSecretWords.includes(word) || wholeSecretWords.includes(singular)) return true;
    if (secretWords.some((secret) => word.endsWith(secret) || singular.endsWith(secret))) return true;
    return !countsTokens && (word.endsWith("token") || singular.endsWith("token"));
  });
}

const schemeStart = /[A-Za-z][A-Za-z0-9+.-]*:\/\//g;

/**
 * Every URL in `text` with its password masked (or its whole user-info, when
 * it is one word: `https://TOKEN@github.com`), and the values of query
 * parameters named like secrets. URLs are found anywhere in the text
 * (`DATABASE_URL=postgres://u:p@h/db`, an error message quoting a source).
 *
 * The authority is split as the WHATWG URL parser splits it: it ends at the
 * first / ? # \ (or white space, which cannot be in a URL), and the host
 * starts after its last @. A password holding an unencoded @ (`p@ss`) is
 * therefore masked whole, where splitting at the first @ showed its tail.
 */
export function redactUrl(text: string): string {
  let shown = "";
  let position = 0;
  for (const match of text.matchAll(schemeStart)) {
    if (match.index < position) continue;
    const authorityStart = match.index + match[0].length;
    let authorityEnd = authorityStart;
    while (authorityEnd < text.length && !/[/?#\\\s]/.test(text.charAt(authorityEnd))) authorityEnd += 1;
    const authority = text.slice(authorityStart, authorityEnd);
    const at = authority.lastIndexOf("@");
    shown += text.slice(position, authorityStart);
    if (at >= 0) {
      const userInfo = authority.slice(0, at);
      const colon = userInfo.indexOf(":");
      shown += `${colon >= 0 ? `${userInfo.slice(0, colon)}:${masked}` : masked}${authority.slice(at)}`;
    } else {
      shown += authority;
    }
    position = authorityEnd;
  }
  shown += text.slice(position);
  return shown.replace(/([?&])([^=&#\s]+)=([^&#\s]*)/g, (match, separator: string, name: string) =>
    isSecretName(name) ? `${separator}${name}=${masked}` : match,
  );
}

/** Env values as `audience` may see them: none for a read token; for an admin, secret names masked and URL passwords hidden. */
export function redactEnv(env: Readonly<Record<string, string>>, audience: Audience = "admin"): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([name, value]) => [name, audience === "read" || isSecretName(name) ? masked : redactUrl(value)]),
  );
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
export function redactProfile<Profile extends ProfileLike>(profile: Profile, audience: Audience = "admin"): Profile {
  return {
    ...profile,
    source: redactUrl(profile.source),
    ...(profile.env ? { env: redactEnv(profile.env, audience) } : {}),
    ...(profile.args ? { args: redactArgs(profile.args) } : {}),
  };
}

/** A model entry as it may be shown: everything secret-looking masked, and for a read token every env value. */
export function redactEntry(entry: ModelEntry, audience: Audience = "admin"): ModelEntry {
  return {
    ...entry,
    ...(entry.origin !== undefined ? { origin: redactUrl(entry.origin) } : {}),
    ...(entry.adapters ? { adapters: entry.adapters.map((adapter) => ({ ...adapter, source: redactUrl(adapter.source) })) } : {}),
    ...(entry.profiles ? { profiles: entry.profiles.map((profile) => redactProfile(profile, audience)) } : {}),
    ...(entry.external ? { external: { ...entry.external, base_url: redactUrl(entry.external.base_url) } } : {}),
  };
}

/** Audit before/after hold whole entries; anything that is not one passes with its URLs masked. */
export function redactAuditValue(value: unknown, audience: Audience = "admin"): unknown {
  if (typeof value !== "object" || value === null || !("name" in value)) return redactStrings(value, audience);
  return redactEntry(value as ModelEntry, audience);
}

/**
 * The last line of defence for an answer of the admin API, whatever its shape
 * (an events list, a replica's failure reason, a view added later): every
 * string has its URL passwords masked, and for a read token every object
 * under a key named `env` has its values masked. Views mask by name first;
 * this catches what a new field forgets.
 */
export function redactStrings(value: unknown, audience: Audience, depth = 0): unknown {
  if (typeof value === "string") return value.includes("://") || value.includes("?") ? redactUrl(value) : value;
  if (typeof value !== "object" || value === null || depth > 32) return value;
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, audience, depth + 1));
  if (value instanceof Date || Buffer.isBuffer(value)) return value;
  const shown: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    shown[key] =
      key === "env" && audience === "read" && typeof inner === "object" && inner !== null && !Array.isArray(inner)
        ? Object.fromEntries(Object.keys(inner).map((name) => [name, masked]))
        : redactStrings(inner, audience, depth + 1);
  }
  return shown;
}

/** What a profile holds that may turn up verbatim in its engine's output. */
interface SecretBearingProfile extends ProfileLike {
  readonly secret_env?: Readonly<Record<string, string>> | undefined;
}

/**
 * The secret values a replica of this profile runs with, for masking its
 * engine's own output: engines echo their settings (vLLM logs its
 * non-default args, api_key included), in formats no rule by name can
 * follow. Values under four characters are left out: masking every "1" in a
 * log would hide more than it protects.
 */
export function secretValuesOf(profile: SecretBearingProfile, environment: Readonly<Record<string, string | undefined>>): string[] {
  const values = new Set<string>();
  const addUrlPasswords = (text: string) => {
    for (const match of text.matchAll(/[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\\s]*)@/g)) {
      const userInfo = match[1] ?? "";
      const colon = userInfo.indexOf(":");
      values.add(colon >= 0 ? userInfo.slice(colon + 1) : userInfo);
    }
  };
  addUrlPasswords(profile.source);
  for (const [name, value] of Object.entries(profile.env ?? {})) {
    if (isSecretName(name)) values.add(value);
    addUrlPasswords(value);
  }
  for (const serverVariable of Object.values(profile.secret_env ?? {})) {
    const value = environment[serverVariable];
    if (value !== undefined) values.add(value);
  }
  const argv = profile.args ?? [];
  argv.forEach((argument, index) => {
    const equals = argument.indexOf("=");
    if (argument.startsWith("-") && equals > 0 && isSecretName(argument.slice(0, equals))) values.add(argument.slice(equals + 1));
    else if (argument.startsWith("-") && isSecretName(argument) && argv[index + 1] !== undefined && !argv[index + 1]?.startsWith("--")) values.add(argv[index + 1] as string);
    addUrlPasswords(argument);
  });
  return [...values].filter((value) => value.length >= 4).sort((first, second) => second.length - first.length);
}

/** A line of engine output as it may be shown: URL passwords and the replica's known secret values masked. */
export function redactOutputLine(line: string, secretValues: readonly string[]): string {
  let shown = line;
  // Longest first, so a secret that contains another is masked whole.
  for (const value of secretValues) if (shown.includes(value)) shown = shown.split(value).join(masked);
  return redactUrl(shown);
}
