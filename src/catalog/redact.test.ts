import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isSecretName, redactArgs, redactEntry, redactEnv, redactUrl } from "./redact.js";

describe("masking secrets on the way out", () => {
  it("masks URL passwords and secret query parameters, keeping the rest", () => {
    expect(redactUrl("https://robot:s3cret@mirror.example/m/")).toBe("https://robot:***@mirror.example/m/");
    expect(redactUrl("https://s3.example/m.gguf?X-Amz-Credential=AKIA1&X-Amz-Signature=abc&part=2")).toBe(
      "https://s3.example/m.gguf?X-Amz-Credential=***&X-Amz-Signature=***&part=2",
    );
    expect(redactUrl("/models/qwen")).toBe("/models/qwen");
  });

  it("tells secret names by their words, not by substrings", () => {
    for (const name of ["HF_TOKEN", "--api-key", "PGPASSWORD", "OPENAI_API_KEY", "X-Amz-Signature", "--hf-token", "APIKEY"]) expect(isSecretName(name), name).toBe(true);
    for (const name of ["--tokenizer", "TOKENIZERS_PARALLELISM", "--max-num-batched-tokens", "VLLM_LOGGING_LEVEL", "--keep-alive"]) expect(isSecretName(name), name).toBe(false);
  });

  it("knows the secret names people really use: passphrases, PGPASS, plurals, prefixes and suffixes", () => {
    const secret = ["SSH_PASSPHRASE", "PGPASS", "DB_PASSWORDS", "MY_API_KEYS", "GITHUB_TOKEN", "HF_TOKENS", "APP_SECRET", "CLIENT_SECRETS", "CREDENTIALS", "AWS_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS", "MYSQL_PWD_PASSWORD", "--db-password", "--passphrase", "apiKey", "hfToken", "SESSION_COOKIE", "PRIVATE_KEY", "GITHUB_PAT", "X-Auth-Token", "BASIC_AUTH"];
    for (const name of secret) expect(isSecretName(name), name).toBe(true);
    const plain = ["--max-total-tokens", "--num-speculative-tokens", "--long-prefill-token-threshold", "BOS_TOKEN_ID", "--skip-special-tokens", "PATH", "PWD", "HOME", "--max-num-seqs", "CUDA_VISIBLE_DEVICES", "--tokenizer-mode", "--pipeline-parallel-size", "--bypass-cache"];
    for (const name of plain) expect(isSecretName(name), name).toBe(false);
  });

  it("masks URL passwords anywhere in a value, a password holding @ whole", () => {
    expect(redactUrl("postgres://app:p@ss@db.internal:5432/app")).toBe("postgres://app:***@db.internal:5432/app");
    expect(redactUrl("DATABASE_URL=postgres://u:p@h/db and redis://:r3dis@cache:6379/0")).toBe("DATABASE_URL=postgres://u:***@h/db and redis://:***@cache:6379/0");
    expect(redactUrl("https://ghp_token123@github.com/org/repo")).toBe("https://***@github.com/org/repo");
    // An @ after the host is in the path, not a password: hf://org/name@revision stays as written.
    expect(redactUrl("hf://Qwen/Qwen2.5-7B-Instruct@a09a354")).toBe("hf://Qwen/Qwen2.5-7B-Instruct@a09a354");
  });

  it("masks env values by name and URL passwords inside the others, and every value for a read token", () => {
    const env = { DATABASE_URL: "postgres://u:p@w@h/db", LEVEL: "INFO", PGPASS: "x" };
    expect(redactEnv(env)).toEqual({ DATABASE_URL: "postgres://u:***@h/db", LEVEL: "INFO", PGPASS: "***" });
    expect(redactEnv(env, "read")).toEqual({ DATABASE_URL: "***", LEVEL: "***", PGPASS: "***" });
  });

  it("leaves no URL password, whatever it holds, and keeps the host the URL parser sees (property)", () => {
    const userInfoCharacter = fc.constantFrom(..."abcXYZ019-._~!$&'()*+,;=:@%".split(""));
    fc.assert(
      fc.property(
        fc.constantFrom("https", "http", "postgres", "postgresql", "redis", "s3"),
        fc.stringMatching(/^[a-z0-9]{1,12}$/),
        fc.array(userInfoCharacter, { minLength: 1, maxLength: 24 }).map((characters) => characters.join("")),
        fc.constantFrom("db.internal", "10.0.0.7:5432", "mirror.example", "[::1]:8080"),
        fc.constantFrom("", "/", "/db", "/models/qwen@rev?part=1", "?sslmode=require"),
        fc.constantFrom("", "DATABASE_URL=", "fetch failed for "),
        (scheme, user, password, host, rest, before) => {
          const url = `${scheme}://${user}:${password}@${host}${rest}`;
          const parsed = new URL(url);
          const shown = redactUrl(`${before}${url} (tried twice)`);
          const shownUrl = new URL(shown.slice(before.length, shown.length - " (tried twice)".length));
          expect(shownUrl.host).toBe(parsed.host);
          expect(shownUrl.username).toBe(parsed.username);
          expect(shownUrl.password).toBe("***");
          expect(shownUrl.pathname + shownUrl.search).toBe(parsed.pathname + parsed.search);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("masks the values of secret-looking flags in both spellings", () => {
    expect(redactArgs(["--api-key", "sk-live-1", "--hf-token=hf_x", "--max-model-len", "8192", "--enable-prefix-caching"])).toEqual([
      "--api-key",
      "***",
      "--hf-token=***",
      "--max-model-len",
      "8192",
      "--enable-prefix-caching",
    ]);
  });

  it("masks a whole entry: env, args, sources, origin and external base URL", () => {
    const shown = JSON.stringify(
      redactEntry({
        name: "m",
        origin: "https://u:p1@hub.example/m",
        adapters: [{ name: "a", source: "https://u:p2@mirror/a/" }],
        profiles: [{ engine: "vllm", source: "https://u:p3@mirror/m/", env: { HF_TOKEN: "p4", LEVEL: "INFO" }, args: ["--api-key", "p5"] }],
      }),
    );
    for (const secret of ["p1", "p2", "p3", "p4", "p5"]) expect(shown).not.toContain(`"${secret}"`);
    for (const secret of [":p1@", ":p2@", ":p3@"]) expect(shown).not.toContain(secret);
    expect(shown).toContain('"LEVEL":"INFO"');
  });
});
