import { describe, expect, it } from "vitest";
import { loadServerConfig } from "../catalog/server-config.js";
import { openGatewayWarning } from "./open-gateway-warning.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

describe("gateway auth setting", () => {
  it("warns about an open gateway on any address but loopback, and never about keys", () => {
    for (const host of ["127.0.0.1", "127.0.0.53", "::1", "localhost"]) expect(openGatewayWarning("open", host)).toBeUndefined();
    for (const host of ["0.0.0.0", "10.0.0.5", "::"]) expect(openGatewayWarning("open", host)).toContain("the gateway is OPEN");
    expect(openGatewayWarning("keys", "0.0.0.0")).toBeUndefined();
  });

  it("defaults to keys and reads gateway.auth from server.yaml, refusing anything else", () => {
    const folder = mkdtempSync(path.join(tmpdir(), "llmgw-gateway-auth-"));
    try {
      const file = path.join(folder, "server.yaml");
      expect(loadServerConfig(undefined).gatewayAuth).toBe("keys");
      writeFileSync(file, "gateway:\n  auth: open\n");
      expect(loadServerConfig(file).gatewayAuth).toBe("open");
      writeFileSync(file, "gateway:\n  auth: none\n");
      expect(() => loadServerConfig(file)).toThrow(/keys \(gateway API keys\) or open/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
