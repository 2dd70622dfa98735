import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { secretValuesOf } from "../catalog/redact.js";
import { maskedLines } from "./masked-lines.js";

describe("a replica's log on its way out", () => {
  const secrets = secretValuesOf(
    {
      source: "https://robot:source-pass@mirror/m/",
      env: { HF_TOKEN: "hf_env_secret", LEVEL: "INFO", DATABASE_URL: "postgres://u:db-pass@h/db" },
      args: ["--api-key", "sk-arg-secret", "--hf-token=hf_flag_secret", "--port", "8000"],
      secret_env: { OPENAI_KEY: "SERVER_OPENAI" },
    },
    { SERVER_OPENAI: "sk-server-secret" },
  );

  it("knows every secret value a profile runs with, and nothing else", () => {
    expect(new Set(secrets)).toEqual(new Set(["source-pass", "hf_env_secret", "db-pass", "sk-arg-secret", "hf_flag_secret", "sk-server-secret"]));
  });

  it("masks a secret that arrives split over two chunks, and a URL password, and keeps every other byte", async () => {
    const whole = Buffer.from("starting with key sk-arg-secret and token hf_env_secret\nfetch https://robot:anything@mirror/m/ ok\nnon-ascii \u00e9\u00e8 tail");
    const splitInSecret = whole.indexOf("secret and");
    const splitInCharacter = whole.indexOf(Buffer.from("\u00e9")) + 1;
    const chunks = [whole.subarray(0, splitInSecret), whole.subarray(splitInSecret, splitInCharacter), whole.subarray(splitInCharacter)];
    const shown = await text(Readable.from(chunks).pipe(maskedLines(secrets)));
    expect(shown).toBe("starting with key *** and token ***\nfetch https://robot:***@mirror/m/ ok\nnon-ascii \u00e9\u00e8 tail");
  });
});
