import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refusalOf } from "../../test/support/refusal.js";
import { loadServerConfig } from "./server-config.js";
import { defaultServerLimits, limitsFromText } from "./server-limits.js";

describe("server.yaml limits", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-limits-"));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const load = (text: string) => {
    const file = path.join(directory, "server.yaml");
    writeFileSync(file, text);
    return loadServerConfig(file);
  };

  it("keeps the limits in force before the section existed when it is left out", () => {
    expect(load("listen: 127.0.0.1:0\n").limits).toEqual({
      bodyBytes: 32 * 1024 * 1024,
      adminBodyBytes: 4 * 1024 * 1024,
      headerBytes: 16 * 1024,
      headerTimeoutMs: 10_000,
      requestTimeoutMs: 60_000,
      idleTimeoutMs: 72_000,
      connections: 10_000,
      requestsPerKey: 256,
    });
  });

  it("reads every field, durations as the catalog writes them, and one body limit for /v1 and the admin API", () => {
    const limits = load(
      "limits:\n  body_bytes: 1048576\n  header_bytes: 8192\n  header_timeout: 5s\n  request_timeout: 1m\n  idle_timeout: 30s\n  connections: 500\n  requests_per_key: 16\n",
    ).limits;
    expect(limits).toEqual({ bodyBytes: 1_048_576, adminBodyBytes: 1_048_576, headerBytes: 8192, headerTimeoutMs: 5000, requestTimeoutMs: 60_000, idleTimeoutMs: 30_000, connections: 500, requestsPerKey: 16 });
  });

  it.each([
    ["body_bytes: 10", "limits.body_bytes: the largest request body in bytes, 1024 to 1073741824"],
    ["header_bytes: 16.5", "limits.header_bytes: the largest request head in bytes, 1024 to 1048576"],
    ["header_timeout: 0s", "limits.header_timeout: a duration between 1s and 10m"],
    ["request_timeout: soon", "limits.request_timeout: a duration such as 90s"],
    ["idle_timeout: 2h", "limits.idle_timeout: a duration between 1s and 1h"],
    ["connections: 0", "limits.connections: a whole number of open connections per port, 1 to 1000000"],
    ["requests_per_key: -1", "limits.requests_per_key: a whole number of requests in flight per gateway key, 1 to 1000000"],
    ["request_per_key: 5", 'limits.request_per_key: unknown key "request_per_key" (did you mean "requests_per_key"?)'],
  ])("refuses %s, naming the field and the range", (line, expected) => {
    const error = refusalOf(() => load(`limits:\n  ${line}\n`));
    expect(error.message).toContain("server.yaml");
    expect([error.message, ...error.details.map((detail) => `${detail.where}: ${detail.message}`)].join("\n")).toContain(expected);
  });

  it("refuses a head allowed longer than the whole request, naming both fields", () => {
    const error = refusalOf(() => load("limits:\n  header_timeout: 2m\n  request_timeout: 1m\n"));
    expect(error.message).toContain("server.yaml: limits.header_timeout 2m is longer than server.yaml: limits.request_timeout 1m");
  });
});

describe("the gateway's limit flags", () => {
  const flag = (key: string) => `--${key.replaceAll("_", "-")}`;

  it("read counts and durations as text, with the server's defaults for the rest", () => {
    expect(limitsFromText({ body_bytes: "2048", idle_timeout: "5s", requests_per_key: "8" }, flag)).toEqual({
      ...defaultServerLimits,
      bodyBytes: 2048,
      adminBodyBytes: 2048,
      idleTimeoutMs: 5000,
      requestsPerKey: 8,
    });
  });

  it("refuse a bad value naming the flag and the range", () => {
    expect(refusalOf(() => limitsFromText({ connections: "many" }, flag)).message).toBe(
      "--connections many: expected a whole number of open connections per port, 1 to 1000000 (past a million the process runs out of file descriptors first)",
    );
    expect(refusalOf(() => limitsFromText({ header_timeout: "10" }, flag)).message).toContain("--header-timeout 10: expected a duration such as 90s");
  });
});
