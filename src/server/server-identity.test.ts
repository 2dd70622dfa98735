import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { serverIdSchema } from "../protocol/agent-protocol.js";
import { serverIdentity } from "./server-identity.js";

describe("the identity a server presents to agents", () => {
  it("is the same for the same key, whatever serves it, and differs for another key", () => {
    const key = randomBytes(32);
    expect(serverIdentity(Buffer.from(key))).toBe(serverIdentity(key));
    expect(serverIdentity(randomBytes(32))).not.toBe(serverIdentity(key));
  });

  it("is what the agent protocol accepts as a server id", () => {
    expect(serverIdSchema.safeParse(serverIdentity(randomBytes(32))).success).toBe(true);
  });
});
