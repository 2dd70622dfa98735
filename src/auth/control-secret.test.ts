import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ControlSecrets, deriveControlSecret } from "./control-secret.js";

describe("control secrets", () => {
  const key = randomBytes(32);

  it("gives each credential the secret derived from it and the sha256 its agent keeps, the same on every call", () => {
    const secrets = new ControlSecrets(key);
    const first = secrets.of("credential-a");
    expect(first.secret).toBe(deriveControlSecret(key, "credential-a"));
    expect(first.hash).toBe(createHash("sha256").update(first.secret).digest("hex"));
    expect(secrets.of("credential-a")).toBe(first);
    expect(secrets.of("credential-b").secret).not.toBe(first.secret);
  });

  it("answers the same secrets after starting over past its bound", () => {
    const secrets = new ControlSecrets(key, 2);
    const before = ["a", "b", "c", "d"].map((credential) => secrets.of(credential).secret);
    expect(["a", "b", "c", "d"].map((credential) => secrets.of(credential).secret)).toEqual(before);
    expect(before).toEqual(["a", "b", "c", "d"].map((credential) => deriveControlSecret(key, credential)));
  });

  it("derives another secret under another server key", () => {
    expect(new ControlSecrets(randomBytes(32)).of("credential-a").secret).not.toBe(new ControlSecrets(key).of("credential-a").secret);
  });
});
